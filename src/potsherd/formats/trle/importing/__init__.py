"""glTF scene -> one TR4 moveable (a WadMerger ``.trwad`` root), the inverse of
:mod:`.scene`.

* **TR space.**  A scene written by potsherd has a node with
  ``extras.tr4_moveable`` (the moveable); its frame is the TR item frame.  Any
  other glTF is taken in glTF conventions and turned into TR space by
  ``(x, y, z) -> (-x, -y, z) / unit_scale`` (the exporter's root rotation and
  scale undone).
* **Skeleton.**  Bones are the moveable node's descendants (potsherd scenes),
  else every skin joint and mesh node with their ancestors (an empty wrapper
  at the top, such as Blender's armature node, is no bone).  Each bone's TR
  frame is its world transform without scale, seen in TR axes, and without its
  rotation too when the scene has no animation: only keyframes hold a bone's
  rotation, so the rest rotations are baked into the meshes.  The moveable's
  origin is the scene's (the item's place on the floor): the root bone's offset
  from it is the keyframes' offset, or, without animations, is kept in the
  root's vertices, so a model stays where the glTF puts it with one root node as
  with several.  Link offsets are the bones'
  origins in their parents' frames (rounded to integers), link flags the
  push/pop encoding of the tree (``extras.link_flags`` kept when it encodes the
  same tree).  Skinned triangles go to their dominant joint's bone.
* **Meshes.**  Vertices in the bone's frame, rounded to TR integers and merged
  by (position, normal or shade); triangles wound clockwise; two triangles
  become a quad when they share a diagonal and the texture corners (potsherd
  scenes) or the plane (others) allow it.  Shades where the source has vertex
  colours and no normals (or potsherd marked the part shaded), else normals of
  length 16384.  A mesh holds at most 32767 vertices and 65535 polygons; a
  larger one is refused before anything is encoded.  Collision spheres are computed, or kept from
  ``extras.tr4_sphere`` when every vertex lies inside.
* **Textures.**  A potsherd scene's atlas rectangles (``extras.tr4_textures``)
  come back as the same texinfos with their pixels.  Other textured triangles
  and quads are baked: their UV area is resampled onto a rectangle whose
  corners the polygon uses (at most 64 pixels a side, a warning when that
  shrinks it; identical blocks shared; more than 4096 textures are refused).
  Untextured materials get a 4x4 block of their base colour.
* **Animations.**  Each glTF animation becomes one TR animation, sampled every
  ``frame_duration`` game frames (``extras.frame_duration``, else
  ``30 / frame_rate`` when that option is given or nothing is carried; never
  the ``like`` moveable's); rotations become the engine's packed 10-bit or
  single-axis 12-bit angles (``qY * qX * qZ``), the root bone's position the
  keyframe offset; bounding boxes are those of the posed meshes, or the carried
  ``extras.bboxes`` when they agree within 32 units.  With ``like``, keyframes
  and meshes the glTF left unchanged keep the original words and records, so
  an unedited round trip gives the original bytes: a mesh whose triangles are
  the original's in any order (:mod:`.same`), an animation whose every
  key lies on the original's motion (:func:`.animation._on_original_motion`;
  a glTF that came back through Blender without its extras is first given them
  back by :mod:`.like`).  A keyframe's size is a byte: more than 255
  words (123 bones turning about several axes) is refused.  State changes,
  dispatches, commands, state ids, speeds and ``frame_start`` come from the animation's
  extras, else from ``like`` (the moveable being replaced), else defaults (no
  state changes, ``next_anim`` loops on itself).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np

from ....scene import compute_normals, decompose_matrix, quat_to_matrix, weld
from ....scene.bake_colors import linear_to_srgb, unit_colors
from ....scene.finite import require_finite
from ....scene.geometry import flattened_triangles
from ....scene.ops import from_time_zero, triangle_sets, world_matrices
from .. import model
from ..moveables import TRWAD_VERSION
from .base import FPS, ImportRefused
from .animation import _anim_base, _animations, mov_table
from .animation import euler_yxz, rotation_words  # noqa: F401  (imported from here)
from .same import pixel_corners, same_attributes, same_mesh, same_triangles
from .polygons import _attributes, baked_polygons_of, polygons as make_polygons
from .textures import _Textures
from ....scene.import_prep import Holds, prepare, warn_once

#: what a moveable stores of a glTF (scene.import_prep): normals or, for vertex
#: colours without normals, pre-lit shades; colours beside normals are baked into
#: the textures; no morph targets
IMPORT_HOLDS = Holds("trwad", normals=True, shades=True, vertex_colors=False, texture=True,
                     morph_targets=False)
#: a moveable potsherd wrote (a ``tr4_moveable`` node): its colours are the shades
#: it exported, beside normals too (read per part by ``_shaded``)
OWN_HOLDS = dataclasses.replace(IMPORT_HOLDS, vertex_colors=True, texture=False)

# A mesh's vertex count is a u16 but its normal (or, negated, shade) count, one per
# vertex, an i16 (layouts/common.layout); its polygon count a u16.
MAX_VERTICES = 32767
MAX_POLYGONS = 0xFFFF

def from_scene(scene: Any, *, like: Any = None, out_name: str = "", applied: dict | None = None,
               **options: Any) -> dict:
    """The ``.trwad`` root of the moveable in ``scene`` (see the module docstring).
    ``like`` is a decoded ``.trwad`` root (or None) supplying what the glTF lacks.
    ``applied`` (a dict) is given the ``unit_scale`` chosen for a foreign scene."""
    given_unit = options.get("unit_scale")
    sets = None
    unit = float(given_unit or 1.0 / 512.0)
    rate = float(options.get("frame_rate") or FPS)
    if not (rate > 0 and math.isfinite(rate)):
        raise ImportRefused(f"frame_rate must be positive, found {rate}")
    like = like if like and "moveable" in like else None
    require_finite(scene)
    ours = any("tr4_moveable" in nd.extras for nd in scene.nodes)
    scene = from_time_zero(prepare(scene, OWN_HOLDS if ours else IMPORT_HOLDS))
    if not scene.nodes:
        raise ImportRefused("the scene has no mesh to import")
    world = world_matrices(scene)
    holder = _pick_holder(scene, options.get("moveable"))
    if holder is not None:
        scene = _moveable_view(scene, holder)
        to_tr = np.linalg.inv(world[holder])
        hx = scene.nodes[holder].extras
    else:
        if not given_unit:
            sets = triangle_sets(scene, world=world)       # (posed once, for _meshes too)
            unit = _fitting_unit(scene, world, unit, sets)
        if applied is not None:
            applied["unit_scale"] = unit
        to_tr = np.diag([-1.0 / unit, -1.0 / unit, 1.0 / unit, 1.0])
        hx = {}
    bones, parents = _bones(scene, holder)
    if not bones:
        raise ImportRefused("the scene has no mesh to import")
    n = len(bones)
    if n > 0xFFFF // 4:
        raise ImportRefused(f"{n} bones: more than a moveable can hold")
    # a foreign bone's TR frame is its glTF frame seen in TR axes (conjugated by the
    # axis turn), so an unrotated glTF bone is an unrotated TR bone
    post = np.eye(4) if holder is not None else np.diag([-1.0, -1.0, 1.0, 1.0])
    real = [b for b in bones if b >= 0]
    rigid = iter(_rigid(np.stack([to_tr @ world[b] @ post for b in real])) if real else ())
    frames = [next(rigid) if b >= 0 else np.eye(4) for b in bones]
    if not scene.animations:
        # Only keyframes carry a bone's rotation, and a moveable without animations is
        # drawn with every bone unrotated. The bones' rest rotations therefore go into
        # their meshes, and the links keep only the offsets.  Nor is there a keyframe
        # offset to place the root bone: the moveable's origin (the item's position
        # on the floor) is the scene's, and the root's offset goes into its vertices.
        for f in frames:
            f[:3, :3] = np.eye(3)
        frames[0][:3, 3] = 0.0
    links = _links(scene, bones, parents, frames, hx, like)
    _warn_unkept_motion(scene, bones, parents)

    textures = _Textures(scene, hx, like)
    meshes = _meshes(scene, world, to_tr, bones, frames, textures, holder is not None,
                     like, sets)
    tex_list = textures.finish()

    mov_x = hx.get("tr4_moveable", {})
    like_mov = like["moveable"] if like else {}
    oid = options.get("object_id")
    if oid is None:
        oid = mov_x.get("object_id", hx.get("object_id", like_mov.get("object_id", 0)))
    anims, cmds, changes, words = _animations(scene, bones, parents, meshes, to_tr, post,
                                              rate,
                                              mov_x or like_mov, like,
                                              rate_given=options.get("frame_rate") is not None,
                                              mov_extras=hx)
    mov = {"object_id": int(oid), "mesh_count": n,
           "first_mesh_pointer": int(mov_x.get("first_mesh_pointer",
                                               like_mov.get("first_mesh_pointer", 0))),
           "links_index": int(mov_x.get("links_index", like_mov.get("links_index", 0))),
           "keyframe_offset": int(anims[0]["keyframe_offset"]) if anims else
           int(mov_x.get("keyframe_offset", like_mov.get("keyframe_offset", 0))),
           "anim_index": _anim_base(mov_x or like_mov) if anims else -1}
    like_zero = np.asarray(like["zero_words"]) if like else None
    root = {
        "version": int(like["version"]) if like else TRWAD_VERSION, "moveable_count": 1,
        "moveable": mov, "link_word_count": 4 * n - 1, "link_words": links,
        "mesh_count": n, "meshes": meshes,
        "zero_words": like_zero if like_zero is not None and len(like_zero) == n
        else np.zeros(n, np.int32),
        "texture_count": len(tex_list), "textures": tex_list,
        "animation_count": len(anims), "animations": anims,
        "command_count": len(cmds), "commands": np.asarray(cmds, np.int16).reshape(-1, 4),
        "keyframe_word_count": len(words), "keyframe_words": np.asarray(words, np.int16),
        "state_changes": changes,
        "sound_count": int(like["sound_count"]) if like else 0,
        "sound_data": bytes(like["sound_data"]) if like else b"",
    }
    scene.warnings.extend(textures.warnings)
    return root


def _fitting_unit(scene: Any, world: np.ndarray, unit: float, sets: list) -> float:
    """``unit`` (metres per TR unit), or a larger one when the model would not fit
    the engine's 16-bit coordinates (a warning says so): the model's largest
    coordinate, of a vertex or of a mesh node or joint (a bone), then becomes
    16384 units."""
    reach = 0.0
    for ts in sets:
        if len(ts.positions):
            reach = max(reach, float(np.abs(ts.positions).max()))
    bones = {i for i, nd in enumerate(scene.nodes) if nd.mesh is not None}
    bones.update(j for sk in scene.skins for j in sk.joints if 0 <= j < len(world))
    if bones:
        reach = max(reach, float(np.abs(world[sorted(bones), :3, 3]).max()))
    if reach / unit <= 30000:
        return unit
    fitted = reach / 16384.0
    scene.warnings.append(f"the model reaches {reach:g} m, beyond the TR4 range at "
                          f"{unit:g} m per unit; imported at {fitted:g} m per unit "
                          "(set unit_scale to choose; kept beside the file for the export)")
    return fitted


# --------------------------------------------------------------------------
# Skeleton


def _pick_holder(scene: Any, wanted: Any) -> int | None:
    found = [i for i, nd in enumerate(scene.nodes) if "tr4_moveable" in nd.extras]
    if not found:
        return None
    if wanted is None:
        return found[0]
    from ..catalog import moveable_id as _moveable_id
    oid = _moveable_id(str(wanted))
    for i in found:
        if int(scene.nodes[i].extras["tr4_moveable"].get("object_id", -1)) == oid:
            return i
    raise ImportRefused(f"the scene holds no moveable with id {oid}")


def _warn_unkept_motion(scene: Any, bones: list, parents: list) -> None:
    """Say what a TR keyframe cannot hold: it has each bone's rotation and the
    root's offset, so scale keys, other bones' translation keys and morph
    weight keys are dropped (each named once, with the first animation)."""
    roots = {b for b, p in zip(bones, parents) if p < 0}
    bone_set = set(bones)
    seen: dict = {}
    for anim in scene.animations:
        for ch in anim.channels:
            v = np.asarray(ch.values, np.float64)
            if not len(v) or not np.isfinite(v).all():
                continue
            # float noise (a tool's float32 keys in TR units) is no motion
            spread = np.abs(v - v[0]).max() > 1e-3 * max(1.0, float(np.abs(v).max()))
            if ch.path == "scale":
                moves = ch.node in bone_set and spread
                what = "scale keys"
            elif ch.path == "translation":
                moves = ch.node in bone_set and ch.node not in roots and spread
                what = "translation keys of bones other than the root"
            elif ch.path == "weights":
                moves = np.abs(v - v[0]).max() > 1e-6
                what = "morph weight keys"
            else:
                continue
            if moves and what not in seen:
                seen[what] = anim.name or "unnamed"
    for what, first in seen.items():
        scene.warnings.append(f"{what} dropped (first in animation {first!r}): TR keyframes "
                              "hold each bone's rotation and the root's offset only")


def _moveable_view(scene: Any, holder: int) -> Any:
    """The scene as one moveable of it sees it: a whole wad's export holds every
    moveable side by side, and only the animations of ``holder`` (those named in
    its ``tr4_animations`` table or moving a node below it) are its own.  The
    scene itself is returned when they all are (also when only this moveable
    is marked: a whole wad's export through Blender, the others unknown to the
    ``--like`` original)."""
    below, stack = {holder}, [holder]
    while stack:
        for c in scene.nodes[stack.pop()].children:
            if c not in below:
                below.add(c)
                stack.append(c)
    names = set(mov_table(scene.nodes[holder].extras))
    own = [a for a in scene.animations
           if a.name in names or any(c.node in below for c in a.channels)]
    if len(own) == len(scene.animations):
        return scene
    return dataclasses.replace(scene, animations=own)


def _bones(scene: Any, holder: int | None) -> tuple[list[int], list[int]]:
    """Bone nodes in TR mesh order (a depth-first order the link stack can encode)
    and each one's parent position (-1 for the root).  -1 as a node is a virtual
    root joining several top bones."""
    parents = scene.parents()
    skinned = {i for i, nd in enumerate(scene.nodes) if nd.skin is not None and nd.mesh is not None}
    if holder is not None:
        wanted: set = set()
        stack = list(scene.nodes[holder].children)
        while stack:
            i = stack.pop()
            if i in skinned:
                continue
            wanted.add(i)
            stack.extend(scene.nodes[i].children)
        tops = [c for c in scene.nodes[holder].children if c in wanted]
    else:
        wanted = set()
        for sk in scene.skins:
            wanted.update(int(j) for j in sk.joints)
        for i, nd in enumerate(scene.nodes):
            if nd.mesh is not None and i not in skinned:
                wanted.add(i)
        for i in list(wanted):
            p = parents[i]
            while p is not None and p not in wanted:
                if p not in skinned:
                    wanted.add(p)
                p = parents[p]
        tops = [i for i in sorted(wanted) if parents[i] not in wanted]
        joints = {int(j) for sk in scene.skins for j in sk.joints}
        while len(tops) == 1:   # an empty wrapper (Blender's armature node) is no bone
            top = tops[0]
            kids = [c for c in scene.nodes[top].children if c in wanted]
            if top in joints or scene.nodes[top].mesh is not None or len(kids) != 1:
                break
            wanted.discard(top)
            tops = kids
    order: list[int] = []
    par: list[int] = []
    if len(tops) > 1:
        order.append(-1)
        par.append(-1)
    stack2 = [(t, 0 if len(tops) > 1 else -1) for t in reversed(tops)]
    while stack2:
        i, p = stack2.pop()
        pos = len(order)
        order.append(i)
        par.append(p)
        kids = [c for c in scene.nodes[i].children if c in wanted]
        stack2.extend((c, pos) for c in reversed(kids))
    return order, par


def _rigid(m: np.ndarray) -> np.ndarray:
    """Matrices (..., 4, 4) without their scale (rotation and translation only):
    every bone's at once, the same arithmetic as one by one."""
    t, r, _ = decompose_matrix(m)
    out = np.zeros(np.shape(m)[:-2] + (4, 4))
    out[..., :3, :3] = quat_to_matrix(r)[..., :3, :3]
    out[..., :3, 3] = t
    out[..., 3, 3] = 1.0
    return out


def _links(scene: Any, bones: list, parents: list, frames: list, hx: dict,
           like: Any) -> np.ndarray:
    """Link words: push/pop flags encoding the tree, the offset of each bone in its
    parent's frame, then 3 trailing words (the WadMerger count's extra ones)."""
    n = len(bones)
    flags = _stack_flags(parents)
    carried = [scene.nodes[b].extras.get("link_flags", 0) if b >= 0 else 0 for b in bones]
    if all(isinstance(c, int) for c in carried) and n > 1:
        walk = model.skeleton(np.asarray([[c, 0, 0, 0] for c in carried[1:]]).ravel(), n)
        if [b["parent"] for b in walk] == list(parents):
            flags = [int(c) for c in carried]      # the carried flags build the same tree
        else:
            flags = [f | (int(c) & ~3) for f, c in zip(flags, carried)]
    words = []
    for j in range(1, n):
        f = flags[j]
        rel = np.linalg.inv(frames[parents[j]]) @ frames[j]
        off = [int(round(c)) for c in rel[:3, 3]]
        if any(abs(c) > 0x7FFFFFFF for c in off):
            raise ImportRefused(f"bone {j} lies too far from its parent")
        words.extend([f, *off])
    tail = hx.get("link_tail")
    if not (isinstance(tail, list) and len(tail) == 3) and like is not None:
        tail = np.asarray(like["link_words"])[4 * max(int(like["moveable"]["mesh_count"]) - 1, 0):]
        tail = [int(x) for x in tail][:3]
    if not (isinstance(tail, list) and len(tail) == 3):
        tail = [0, 0, 0]
    words.extend(int(x) for x in tail)
    return np.asarray(words[:4 * n - 1], np.int32)


def _stack_flags(parents: list) -> list[int]:
    """Per mesh the link flags (1 pop, 2 push) that rebuild ``parents`` from the
    engine's stack walk (mesh j's parent is the current mesh or a popped one)."""
    n = len(parents)
    last_child = {}
    for j in range(1, n):
        last_child[parents[j]] = j
    flags = [0] * n
    for j in range(1, n):
        p = parents[j]
        f = 0
        if p != j - 1:
            f |= 1                     # come back to p: it was pushed at its first child
        if last_child[p] != j:
            f |= 2                     # p has more children: keep it on the stack
        flags[j] = f
    return flags


# --------------------------------------------------------------------------
# Textures


# --------------------------------------------------------------------------
# Meshes


def _meshes(scene: Any, world: np.ndarray, to_tr: np.ndarray, bones: list, frames: list,
            textures: _Textures, ours: bool, like: Any, sets: list | None = None) -> list[dict]:
    position = {b: k for k, b in enumerate(bones)}
    parents = scene.parents()
    per_bone: list[list] = [[] for _ in bones]
    blended = spanning = 0
    for ts in triangle_sets(scene, world=world) if sets is None else sets:
        tris = ts.indices.reshape(-1, 3)
        if not len(tris):
            continue
        if ts.skin is not None:
            sk = scene.skins[ts.skin]
            j = np.asarray(ts.joints, np.int64)
            w = np.asarray(ts.weights, np.float64)
            blended += int(((w > 0.01).sum(axis=1) > 1).sum())
            key = np.where(w == w.max(axis=1, keepdims=True), j, np.iinfo(np.int64).max)
            dom = key.min(axis=1)
            d = dom[tris]
            spanning += int((d.min(axis=1) != d.max(axis=1)).sum())
            owner = np.where((d[:, 1] == d[:, 2]) & (d[:, 0] != d[:, 1]), d[:, 1], d[:, 0])
            node_of = np.asarray([int(sk.joints[k]) if 0 <= k < len(sk.joints) else -1
                                  for k in range(int(owner.max()) + 1)])
            owner_nodes = node_of[owner]
        else:
            owner_nodes = np.full(len(tris), ts.node)
        for node in np.unique(owner_nodes):
            b = int(node)
            while b is not None and b not in position:
                b = parents[b]
            k = position.get(b)
            if k is None:
                if ours:      # another moveable of the same scene (a whole wad's export)
                    continue
                k = 0         # a foreign glTF: whatever hangs elsewhere goes to the root bone
            per_bone[k].append((ts, tris[owner_nodes == node]))
    if blended:
        scene.warnings.append(f"{blended} skinned vertices blend several joints: a moveable's "
                              "meshes are rigid, so each triangle follows its dominant joint")
    if spanning:
        scene.warnings.append(f"{spanning} skinned triangles have corners on different joints: "
                              "a moveable's meshes are rigid, so each follows one joint and its "
                              "other corners leave theirs when the joints move apart")
    seen: dict = {}     # per triangle set (a skinned one is every bone's): what _mesh reuses
    likes = [like["meshes"][k] if like and k < len(like["meshes"]) else None
             for k in range(len(per_bone))]
    if textures.carried:
        return [_mesh(scene, frames[k], to_tr, parts, textures, ours, bones[k], likes[k], seen)
                for k, parts in enumerate(per_bone)]
    # without an atlas every mesh's polygons are made in one pass (baked_polygons_of);
    # a mesh refused on its way there is refused after the meshes before it, as one by one
    keyed: list = []
    made: list = []
    refused = None
    try:
        for k, parts in enumerate(per_bone):
            keyed.append(_corner_keys(scene, frames[k], to_tr, parts, ours, bones[k], seen))
    except Exception as e:      # noqa: BLE001 - raised below, in its place
        refused = e
    for k, (kd, (first, ids)) in enumerate(zip(keyed, _weld_each([kd.keys for kd in keyed]))):
        try:
            made.append(_welded(scene, bones[k], kd, first, ids))
        except Exception as e:  # noqa: BLE001 - (before any later mesh's refusal)
            refused = e
            break
    polys = baked_polygons_of(scene, [(c.key, c.uv, c.pos, c.mats) for c in made], textures)
    out = [_record(scene, c, p, bones[k], likes[k]) for k, (c, p) in enumerate(zip(made, polys))]
    if refused is not None:
        raise refused
    return out


def _mesh(scene: Any, frame: np.ndarray, to_tr: np.ndarray, parts: list, textures: _Textures,
          ours: bool, bone: int, like_mesh: Any, seen: dict) -> dict:
    c = _corners(scene, frame, to_tr, parts, ours, bone, seen)
    if like_mesh is not None and textures.carried:
        kept = _kept_mesh(scene, like_mesh, list(c.pos), list(c.uv), c.mats, textures,
                          {"vertices": [tuple(r) for r in c.verts.tolist()],
                           "normal_count": -len(c.verts) if c.use_shades else len(c.verts),
                           "shades": c.shades.tolist(),
                           "normals": [tuple(r) for r in c.normals.tolist()],
                           "polygons": []}, c.byte_colours)
        if kept is not None:
            return kept
    polygons = make_polygons(scene, c.key, c.uv, c.pos, c.mats, textures, ours)
    return _record(scene, c, polygons, bone, like_mesh)


class _Corners(NamedTuple):
    """A bone mesh before its polygons: merged vertices and, per clockwise
    triangle, its corners' vertex ids, UVs and positions and its material."""
    verts: np.ndarray
    normals: np.ndarray
    shades: np.ndarray
    use_shades: bool
    byte_colours: bool
    key: Any
    uv: Any
    pos: Any
    mats: list


def _corners(scene: Any, frame: np.ndarray, to_tr: np.ndarray, parts: list, ours: bool,
             bone: int, seen: dict) -> _Corners:
    kd = _corner_keys(scene, frame, to_tr, parts, ours, bone, seen)
    first, ids = weld(kd.keys) if kd.keys is not None else (None, None)
    return _welded(scene, bone, kd, first, ids)


class _Keyed(NamedTuple):
    """A bone mesh's corners before its vertices are merged: per corner its key
    (position, attribute width, shade or normal), or None without triangles."""
    keys: Any
    use_shades: bool
    byte_colours: bool
    uv: Any
    pos: Any
    mats: list


def _weld_each(keys: list) -> list:
    """:func:`weld` of each mesh's corner keys (None: no corners), in one weld of
    them all with the mesh's number as a key column: a mesh's vertices are then
    numbered after every earlier mesh's, in its own order of first use."""
    present = [k for k in keys if k is not None]
    if not present:
        return [(None, None) for _ in keys]
    sizes = [len(k) for k in present]
    every = np.concatenate(present)
    mesh = np.repeat(np.arange(len(present), dtype=np.int64), sizes)
    if len(every) and -32768 <= every.min() and every.max() <= 32767 and len(present) < 1 << 15:
        # the columns are 16-bit numbers (positions, widths, shades, normals): two
        # words a key of four each, the same keys equal, weld four times narrower
        u = (every + 32768).view(np.uint64)      # (non-negative now: the same numbers)
        both = np.empty((len(every), 2), np.uint64)
        both[:, 0] = u[:, 0] | (u[:, 1] << 16) | (u[:, 2] << 32) | (u[:, 3] << 48)
        both[:, 1] = u[:, 4] | (u[:, 5] << 16) | (u[:, 6] << 32) | (mesh.astype(np.uint64) << 48)
    else:
        both = np.concatenate([every, mesh[:, None]], 1)
    first, ids = weld(both)
    out, welds = [], iter(sizes)
    c0 = g = 0
    for k in keys:
        if k is None:
            out.append((None, None))
            continue
        c1 = c0 + next(welds)
        mine = ids[c0:c1]
        n = int(mine.max()) + 1 - g if len(mine) else 0
        out.append((first[g:g + n] - c0, mine - g))
        c0, g = c1, g + n
    return out


def _corner_keys(scene: Any, frame: np.ndarray, to_tr: np.ndarray, parts: list, ours: bool,
                 bone: int, seen: dict) -> _Keyed:
    inv = np.linalg.inv(frame) @ to_tr
    rot = inv[:3, :3] / np.linalg.norm(inv[:3, :3], axis=0)
    corner_pos, corner_uv, tri_mat = [], [], []
    keys = None
    use_shades = bool(parts) and all(_shaded(scene, ts, ours, bone) for ts, _ in parts)
    if not ours:
        _warn_shades(scene, parts, use_shades)
    rounded, local = [], []
    flat = total = 0
    for ts, tris in parts:
        if ("reach", id(ts)) not in seen:
            if not np.isfinite(ts.positions).all():
                raise ImportRefused(f"mesh {ts.mesh} has non-finite vertex positions")
            seen["reach", id(ts)] = np.abs(np.asarray(ts.positions, np.float64)).max(0, initial=0)
        # only the vertices these triangles use (a skinned set is shared by every
        # bone), renumbered in order; the whole set is checked against the range
        # unless a bound of its coordinates in this frame shows none can leave it
        mark = np.zeros(len(ts.positions), bool)     # (np.unique and searchsorted,
        mark[tris] = True                            # without sorting a shared set's ids)
        used = np.flatnonzero(mark)
        tris = (np.cumsum(mark) - 1)[tris]
        local.append((ts, used, tris))
        bound = float((np.abs(inv[:3, :3]) @ seen["reach", id(ts)] + np.abs(inv[:3, 3])).max())
        every = bound * (1 + 1e-9) + 1e-6 >= 32767.5
        q = np.round((ts.positions if every else ts.positions[used]) @ inv[:3, :3].T + inv[:3, 3])
        if np.abs(q).max(initial=0) > 32767:
            raise ImportRefused("a vertex lies beyond the TR4 coordinate range (+-32767 units "
                                "from its bone); pass a larger unit_scale (metres per unit)")
        q = (q[used] if every else q).astype(np.int64)
        flat += flattened_triangles(ts.positions[used], q, tris)
        total += len(tris)
        if use_shades and ts.colors is not None:
            lum = _brightness(np.asarray(ts.colors)[used])
            attr = np.clip(np.round(8191.0 - lum * 8191.0), 0, 8191).astype(np.int64)[:, None]
        else:
            nrm = ts.normals
            if nrm is None:
                nrm = seen.get(("normals", id(ts)))
                if nrm is None:
                    nrm = seen["normals", id(ts)] = compute_normals(ts.positions, ts.indices)
            nrm = np.asarray(nrm, np.float64)[used] @ rot.T
            length = np.linalg.norm(nrm, axis=1, keepdims=True)
            nrm = nrm / np.where(length > 0, length, 1.0)
            attr = np.round(nrm * 16384).astype(np.int64)
        rounded.append((q, attr))
    if flat:
        scene.warnings.append(f"{_bone_name(scene, bone)}: {flat} of {total} triangles flatten to "
                              "lines at whole TR4 units (the model is small for its unit_scale; "
                              "pass a smaller unit_scale, metres per unit)")
    # vertices merged by (position, shade or normal), numbered in order of first use
    # by the triangles' corners (one array operation over every part's corners)
    cols, corner_uvs, corner_qs, mats = [], [], [], []
    for (q, attr), (ts, used, tris) in zip(rounded, local):
        t = np.asarray(tris, np.int64).reshape(-1, 3)
        c = t.reshape(-1)
        key = np.zeros((len(c), 7), np.int64)
        key[:, :3] = q[c]
        key[:, 3] = attr.shape[1]
        key[:, 4:4 + attr.shape[1]] = attr[c]
        cols.append(key)
        uv = np.asarray(ts.uvs[0], np.float64)[used] if ts.uvs else np.zeros((len(q), 2))
        order = t[:, [0, 2, 1]]          # glTF counter-clockwise (a, b, c) -> TR clockwise (a, c, b)
        corner_uvs.append(uv[order])
        corner_qs.append(q[order])
        mats += [ts.material] * len(t)
    if cols:
        keys = np.concatenate(cols)
        corner_uv = np.concatenate(corner_uvs)      # (T, 3, 2): a row per triangle
        corner_pos = np.concatenate(corner_qs)
        tri_mat = mats
    byte_colours = use_shades and any(np.asarray(ts.colors).dtype.kind in "ui"
                                      for ts, _ in parts if ts.colors is not None)
    return _Keyed(keys, use_shades, byte_colours, corner_uv, corner_pos, tri_mat)


def _welded(scene: Any, bone: int, kd: _Keyed, first: Any, ids: Any) -> _Corners:
    """A mesh's corners with its vertices merged by the weld ``first, ids`` of its keys."""
    corner_key = verts = normals = np.zeros((0, 3), np.int64)
    shades = np.zeros(0, np.int64)
    if kd.keys is not None:
        # (every used vertex is a corner: the weld's vertices are the distinct
        # (position, shade or normal) the mesh would hold)
        _check_vertex_count(len(first), scene, bone)
        kv = kd.keys[first]
        verts = kv[:, :3]
        if kd.use_shades:
            shades = np.where(kv[:, 3] == 1, kv[:, 4], 0)
        else:
            normals = np.where((kv[:, 3] == 3)[:, None], kv[:, 4:7], [0, -16384, 0])
        corner_key = ids.reshape(-1, 3)[:, [0, 2, 1]]
    return _Corners(verts, normals, shades, kd.use_shades, kd.byte_colours, corner_key, kd.uv,
                    kd.pos, kd.mats)


def _record(scene: Any, c: _Corners, polygons: Any, bone: int, like_mesh: Any) -> dict:
    """The mesh record of a bone's corners and polygons."""
    verts, normals, shades, use_shades = c.verts, c.normals, c.shades, c.use_shades
    bx = scene.nodes[bone].extras if bone >= 0 else {}
    if len(polygons) > MAX_POLYGONS:
        raise ImportRefused(f"{_bone_name(scene, bone)}: {len(polygons)} polygons; a TR4 mesh "
                            f"holds at most {MAX_POLYGONS} (its polygon count is a u16): "
                            "decimate the mesh (Blender: Decimate modifier) or split it "
                            "among more bones")
    v = np.asarray(verts, np.int16).reshape(-1, 3)
    center, radius = _sphere(v)
    flags = 0
    carried = bx.get("tr4_sphere")
    if like_mesh is not None:
        flags = int(like_mesh.get("flags", 0))
        same = sorted(map(tuple, np.asarray(like_mesh["vertices"]).reshape(-1, 3).tolist())) \
            == sorted(map(tuple, v.tolist()))
        if same:     # unchanged geometry keeps the original sphere
            center = tuple(int(x) for x in like_mesh["center"])
            radius = int(like_mesh["radius"])
    if isinstance(carried, list) and len(carried) == 5 and all(isinstance(x, int) for x in carried):
        flags = carried[4] & 0xFFFF
        c = np.asarray(carried[:3], np.float64)
        if not len(v) or np.linalg.norm(v - c, axis=1).max() <= carried[3] + 1:
            center, radius = tuple(carried[:3]), carried[3]
    mesh = {"center": np.asarray(center, np.int16), "radius": int(radius), "flags": flags,
            "vertex_count": len(v), "vertices": v}
    if use_shades:
        mesh["normal_count"] = -len(v)
        mesh["shades"] = np.asarray(shades, np.int16)
    else:
        mesh["normal_count"] = len(v)
        mesh["normals"] = np.asarray(normals, np.int16).reshape(-1, 3)
    mesh["polygon_count"] = len(polygons)
    mesh["polygons"] = polygons
    if like_mesh is not None and same_mesh(mesh, like_mesh):
        return {k: v for k, v in like_mesh.items() if k != "pad"}
    return mesh


def _kept_mesh(scene: Any, like_mesh: dict, corner_pos: list, corner_uv: list, tri_mat: list,
               textures: _Textures, vertices: dict, byte_colours: bool) -> dict | None:
    """The original mesh record when the glTF's triangles are its triangles (in
    any order, vertices split as may be: :func:`.same.same_triangles`)
    with the same shades or normals, its textures' pixels read from the glTF's
    image as the polygons would have; else None."""
    pixels = []
    for uv, mat in zip(corner_uv, tri_mat):
        arr, _ = textures.image(mat)
        pixels.append(None if arr is None else pixel_corners(uv, arr.shape[1::-1]))
    attrs = [_attributes(scene, m) for m in tri_mat]
    if not (same_triangles(corner_pos, pixels, attrs, like_mesh, textures.rects)
            and same_attributes(vertices, like_mesh, byte_colours)):
        return None
    mat = next((m for m in tri_mat if textures.image(m)[0] is not None), None)
    for p in like_mesh["polygons"]:      # (potsherd's export: one atlas for every material)
        textures.fill(model.texture_index(p["shape"], p["texture"])[0], mat)
    return {k: v for k, v in like_mesh.items() if k != "pad"}


def _bone_name(scene: Any, bone: int) -> str:
    if bone < 0:
        return "the root mesh"
    # (an unnamed joint by its node index: BrainStem's 18 unnamed joints were all "the root")
    name = scene.nodes[bone].name
    return f"the mesh of bone {name!r}" if name else f"the mesh of unnamed bone node {bone}"


def _check_vertex_count(count: int, scene: Any, bone: int) -> None:
    """Refuse a bone mesh beyond the TR4 vertex limit before anything is encoded."""
    if count > MAX_VERTICES:
        raise ImportRefused(
            f"{_bone_name(scene, bone)} has {count} vertices; a TR4 mesh holds at most "
            f"{MAX_VERTICES} (its normal or shade count, one per vertex, is a signed "
            "16-bit number): decimate the mesh (Blender: Decimate modifier) or split it "
            "among more bones")


def _brightness(colors: Any) -> np.ndarray:
    """A shade's display brightness (0..1) from COLOR_0: the mean linear light
    of the RGB, sRGB-encoded, since the game multiplies shades with the texture
    in display space (the inverse of the export's ``lit_colors``)."""
    c = unit_colors(colors)
    mean = c[:, :3].mean(1) if c.ndim == 2 else c
    return linear_to_srgb(mean)


def _warn_shades(scene: Any, parts: list, use_shades: bool) -> None:
    """Name what a foreign scene's shades lose (once per import): a TR mesh has
    one shade (a brightness) per vertex, or normals, never both."""
    if use_shades:
        c = [unit_colors(ts.colors) for ts, _ in parts]
        if any(x.ndim == 2 and x.shape[1] >= 3 and np.ptp(x[:, :3], axis=1).max(initial=0)
               > 1.5 / 255 for x in c):
            warn_once(scene, "trwad: vertex colours without normals become shades, a "
                             "brightness per vertex: their hue is dropped")
    elif any(ts.colors is not None for ts, _ in parts):
        warn_once(scene, "trwad: vertex colours (shades) dropped where a bone's mesh also has "
                         "parts with normals: a TR mesh has shades or normals, not both")


def _shaded(scene: Any, ts: Any, ours: bool, bone: int) -> bool:
    """Whether a triangle set's vertex colours are TR shades: potsherd marks the
    shaded parts of a skinned mesh; elsewhere colours without normals are."""
    if ts.colors is None:
        return False
    if not ours:
        return ts.normals is None
    shaded_parts = scene.meshes[ts.mesh].primitives[ts.primitive].extras.get("shaded_parts")
    if shaded_parts is None:
        return True
    sk = scene.skins[ts.skin] if ts.skin is not None else None
    return sk is not None and any(int(sk.joints[j]) == bone for j in shaded_parts
                                  if isinstance(j, int) and 0 <= j < len(sk.joints))


def _sphere(v: np.ndarray) -> tuple[tuple, int]:
    if not len(v):
        return (0, 0, 0), 0
    c = np.round((v.min(0).astype(np.float64) + v.max(0)) / 2)
    r = int(math.ceil(np.linalg.norm(v - c, axis=1).max()))
    return tuple(int(x) for x in c), min(r, 0xFFFF)


# --------------------------------------------------------------------------
# Animations


