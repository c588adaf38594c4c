"""A potsherd export that came back through another tool (Blender) without what
potsherd put in it, recognised against the original it was exported from.

Blender's default glTF export drops every ``extras``, sorts children and
animations by name and turns each joint into a bone pointing at its child (a
constant turn of its frame, its keys, children and inverse bind matrix turned
with it).  Names survive, so with ``--like`` the original's own export (the
scene :func:`.scene.to_scene` makes of it) says what the glTF had: moveables
whose node and bone names are the original's get back the extras of the nodes,
materials, meshes and animations of the same names (only where the glTF has
none), their children and animations go back into the original's order, and
their joints are turned back to the original's frames
(:func:`potsherd.scene.reorient.frames_like`, measured in a pose of their first
animation: Blender writes a root bone's rest transform in another space than
its keys when the armature hangs under a scaled, turned node, and only the
keys drive the mesh).  The importer then sees a potsherd scene again."""
from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np

from ....scene import decompose_matrix, trs_to_matrix
from ....scene.ops import local_matrix, sample_node_trs, triangle_sets, world_matrices
from ....scene.reorient import frames_like, reorient_joints

#: the extras potsherd's export puts on what it makes (and nothing else is copied)
_NODE_KEYS = ("object_id", "tr4_moveable", "link_tail", "tr4_textures", "tr4_animations",
              "link_flags", "tr4_sphere", "link_offset", "originalName")
_MATERIAL_KEYS = ("tr4_attributes", "additive")


def like_scene(fmt: str, root: dict, scene: Any) -> Any:
    """The scene potsherd exports from the original (``fmt`` ``tr4wad`` or
    ``trwad``), skinned when ``scene`` is, at the unit of its ``tr4`` node."""
    from ....document import Document
    from ..scene import to_scene
    unit = None
    for nd in scene.nodes:
        if nd.name == "tr4" and nd.scale is not None:
            s = np.abs(np.asarray(nd.scale, np.float64))
            if np.ptp(s) <= 1e-6 * s.max() and s.max() > 0:
                unit = float(s.mean())
            break
    options = {}
    if fmt == "tr4wad":
        # a glTF of one moveable of the wad is compared with that one's export (whose
        # animations are named without the moveable's prefix)
        from ..catalog import moveable_name
        names = {n.name for n in scene.nodes}
        held = [int(m["object_id"]) for m in root["moveables"]
                if (moveable_name(int(m["object_id"])) or f"moveable{int(m['object_id'])}")
                in names]
        if len(held) == 1:
            options["moveable"] = str(held[0])
    return to_scene(Document(fmt, root, {}), skin=bool(scene.skins), unit_scale=unit,
                    **options)


def restore(scene: Any, like: Any) -> list[str]:
    """Give ``scene`` back what the original's export ``like`` says about the
    moveables of the same names (see the module docstring).  Returns what was
    done, one line each (empty when nothing was needed)."""
    holders = _matched_holders(scene, like)
    if not holders:
        return []
    notes = []
    _prefixed_names(scene, like, holders)
    by_name = {n.name: i for i, n in enumerate(like.nodes)}
    # the atlas rectangles say where each texture is in the original's atlas: kept
    # only when the glTF's image is that size (its pixels are read, edits included)
    keys = _NODE_KEYS if _image_sizes(like) & _image_sizes(scene) else \
        tuple(k for k in _NODE_KEYS if k != "tr4_textures")
    nodes = set()
    restored = 0
    for mine, theirs in holders:
        below = _below(scene, mine)
        nodes |= below
        for i in below:
            j = by_name.get(scene.nodes[i].name)
            if j is not None and j in _below(like, theirs):
                restored += _fill(scene.nodes[i].extras, like.nodes[j].extras, keys)
    for m in scene.materials:
        ref = next((x for x in like.materials if x.name == m.name), None)
        if ref is not None:
            restored += _fill(m.extras, ref.extras, _MATERIAL_KEYS)
    meshes = {m.name: m for m in like.meshes}
    for m in scene.meshes:
        ref = meshes.get(m.name)
        if ref is not None and len(ref.primitives) == len(m.primitives):
            for p, q in zip(m.primitives, ref.primitives):
                restored += _fill(p.extras, q.extras, tuple(q.extras))
    anims = {a.name: a for a in like.animations}
    for a in scene.animations:
        ref = anims.get(a.name)
        if ref is not None and not a.extras:
            a.extras = copy.deepcopy(ref.extras)
            restored += 1
    if restored:
        notes.append(f"{restored} TR4 extras the glTF lost taken from the original's export "
                     "(by name)")
    _reorder(scene, like, nodes)
    fixed = sum(_root_rest(scene, like, mine, theirs) for mine, theirs in holders)
    if fixed:
        notes.append(f"{fixed} root bones' rest transforms read as Blender writes them "
                     "(their world transform), which puts the meshes where the original has "
                     "them")
    turned = _turn_back(scene, like, holders, sorted(nodes))
    if turned:
        notes.append(f"{turned} joint frames turned against the original (Blender's bone "
                     "orientation) turned back; poses unchanged")
    return notes


def _prefixed_names(scene: Any, like: Any, holders: list) -> None:
    """A whole wad's export names a moveable's animations ``NAME/animNNN``, the
    export of one moveable ``animNNN``: the original's (``like``, potsherd's
    own export, changed here) take the glTF's names where only that differs,
    in its animations and in its moveable nodes' animation tables."""
    have = {a.name for a in scene.animations}
    for _, theirs in holders:
        prefix = like.nodes[theirs].name
        rows = like.nodes[theirs].extras.get("tr4_animations")
        if not isinstance(rows, list):
            continue
        rename = {r["name"]: f"{prefix}/{r['name']}" for r in rows
                  if isinstance(r, dict) and isinstance(r.get("name"), str)
                  and r["name"] not in have and f"{prefix}/{r['name']}" in have}
        for r in rows:
            if isinstance(r, dict) and r.get("name") in rename:
                r["name"] = rename[r["name"]]
        for a in like.animations:
            if a.name in rename:
                a.name = rename[a.name]


def _matched_holders(scene: Any, like: Any) -> list[tuple[int, int]]:
    """(scene node, like node) of every moveable of ``like`` whose node has a
    namesake in ``scene`` holding the same bone names."""
    out = []
    for j, nd in enumerate(like.nodes):
        if "tr4_moveable" not in nd.extras:
            continue
        mine = [i for i, m in enumerate(scene.nodes) if m.name == nd.name]
        if len(mine) != 1:
            continue
        bones = {like.nodes[b].name for b in _below(like, j) if like.nodes[b].mesh is None}
        have = {scene.nodes[b].name for b in _below(scene, mine[0])}
        if 2 * len(bones & have) >= len(bones) or "tr4_moveable" in scene.nodes[mine[0]].extras:
            out.append((mine[0], j))
    return out


def _image_sizes(scene: Any) -> set:
    import io
    from PIL import Image as PILImage
    out = set()
    for img in scene.images:
        try:
            out.add(PILImage.open(io.BytesIO(img.data)).size)
        except Exception:      # (undecodable or not embedded: no size)
            pass
    return out


def _below(scene: Any, top: int) -> set:
    out, stack = set(), [top]
    while stack:
        i = stack.pop()
        if i not in out:
            out.add(i)
            stack.extend(scene.nodes[i].children)
    return out


def _fill(extras: dict, ref: dict, keys: tuple) -> int:
    missing = [k for k in keys if k in ref and k not in extras]
    for k in missing:
        extras[k] = copy.deepcopy(ref[k])
    return len(missing)


def _reorder(scene: Any, like: Any, nodes: set) -> None:
    """The children of the moveables' ``nodes`` and the animations in the
    original's order (by name; others after them)."""
    rank = {n.name: i for i, n in enumerate(like.nodes)}
    far = len(rank)
    for i in nodes:
        nd = scene.nodes[i]
        nd.children = sorted(nd.children, key=lambda c: rank.get(scene.nodes[c].name, far))
    order = {a.name: i for i, a in enumerate(like.animations)}
    far = len(order)
    scene.animations = sorted(scene.animations, key=lambda a: order.get(a.name, far))


def _root_rest(scene: Any, like: Any, mine: int, theirs: int) -> int:
    """Blender 3.4 writes the rest transform of an armature's root bone as its
    world transform when the armature hangs under other nodes (here the scaled,
    turned ``tr4`` node); its keys are right.  A moveable whose animations do
    not turn it has only that rest pose, so each root bone the original's
    animations do not turn gets the reading that puts the moveable's skinned
    vertices where the original's export has them (the glTF's own reading when
    it does as well).  Returns how many were changed."""
    below = _below(scene, mine)
    joints = {j for sk in scene.skins for j in sk.joints if j in below}
    parents = scene.parents()
    turned = {like.nodes[c.node].name for a in like.animations for c in a.channels
              if c.path == "rotation"}
    roots = [j for j in sorted(joints) if parents[j] not in joints and parents[j] is not None
             and scene.nodes[j].name not in turned]
    if not roots:
        return 0
    original = _points(like, theirs, _below(like, theirs))
    if not original:
        return 0
    world = world_matrices(scene)
    fixes = {}
    for j in roots:
        _, _, sp = decompose_matrix(world[parents[j]])
        nd = scene.nodes[j]
        if nd.matrix is not None or np.ptp(sp) > 1e-6 * np.abs(sp).max():
            continue
        t, r, s = decompose_matrix(local_matrix(nd))
        fix = np.linalg.inv(world[parents[j]]) @ trs_to_matrix(t, r, s * sp)
        ft, fr, fs = decompose_matrix(fix)
        fixes[j] = (tuple(ft), tuple(fr), tuple(fs))
    if not fixes:
        return 0
    as_is = len(original & _points(scene, mine, below))
    trial = copy.copy(scene)
    trial.nodes = list(scene.nodes)
    for j, (t, r, s) in fixes.items():
        trial.nodes[j] = dataclasses.replace(scene.nodes[j], translation=t, rotation=r, scale=s)
    if len(original & _points(trial, mine, below)) <= as_is:
        return 0
    scene.nodes[:] = trial.nodes
    return len(fixes)


def _points(scene: Any, holder: int, below: set) -> set:
    """The rest positions of the vertices skinned to joints below ``holder``, in
    its frame, rounded to whole TR units."""
    part = copy.copy(scene)
    part.nodes = [n if n.skin is not None and set(scene.skins[n.skin].joints) & below
                  else dataclasses.replace(n, mesh=None) for n in scene.nodes]
    part.warnings = []
    world = world_matrices(part)
    to_h = np.linalg.inv(world[holder])
    out: set = set()
    for ts in triangle_sets(part, world=world):
        p = np.round(ts.positions @ to_h[:3, :3].T + to_h[:3, 3]).astype(np.int64)
        out.update(map(tuple, p.tolist()))
    return out


def _turn_back(scene: Any, like: Any, holders: list, nodes: list) -> int:
    """Undo the joints' turn, measured per moveable at the first key of its first
    animation that turns every bone and that the glTF also has (at rest without
    one): Blender writes a bone no channel of an action moves at its rest
    transform, which for a root bone is in another space (see ``_root_rest``)."""
    turns: dict = {}
    anims = {a.name: a for a in scene.animations}
    for mine, theirs in holders:
        below = sorted(i for i in _below(scene, mine) & set(nodes)
                       if scene.nodes[i].mesh is None)
        below_like = _below(like, theirs)
        bones = {i for i in below_like if like.nodes[i].mesh is None and i != theirs}
        ref = next((a for a in like.animations if a.name in anims and bones <= {
            c.node for c in a.channels if c.path == "rotation"}), None)
        if ref is None:
            turns.update(frames_like(scene, like, below))
        else:
            turns.update(frames_like(_posed(scene, anims[ref.name]), _posed(like, ref), below))
    if turns and reorient_joints(scene, turns):
        return len(turns)
    return 0


def _posed(scene: Any, anim: Any, t: float = 0.0) -> Any:
    """A shallow copy of ``scene`` whose animated nodes stand as at time ``t``."""
    out = copy.copy(scene)
    out.nodes = list(scene.nodes)
    for node in {c.node for c in anim.channels if c.path != "weights"}:
        tr, r, s = sample_node_trs(scene, anim, node, [t])
        out.nodes[node] = dataclasses.replace(scene.nodes[node], matrix=None,
                                              translation=tuple(tr[0]), rotation=tuple(r[0]),
                                              scale=tuple(s[0]))
    return out
