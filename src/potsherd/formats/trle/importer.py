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
  frame is its world transform without scale, seen in TR axes; link offsets are the bones'
  origins in their parents' frames (rounded to integers), link flags the
  push/pop encoding of the tree (``extras.link_flags`` kept when it encodes the
  same tree).  Skinned triangles go to their dominant joint's bone.
* **Meshes.**  Vertices in the bone's frame, rounded to TR integers and merged
  by (position, normal or shade); triangles wound clockwise; two triangles
  become a quad when they share a diagonal and the texture corners (potsherd
  scenes) or the plane (others) allow it.  Shades where the source has vertex
  colours and no normals (or potsherd marked the part shaded), else normals of
  length 16384.  Collision spheres are computed, or kept from
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
  an unedited round trip gives the original bytes.  State changes,
  dispatches, commands, state ids, speeds and ``frame_start`` come from the animation's
  extras, else from ``like`` (the moveable being replaced), else defaults (no
  state changes, ``next_anim`` loops on itself).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...core.errors import FormatError
from ...scene import compute_normals, decompose_matrix, quat_to_matrix, trs_to_matrix
from ...scene.ops import local_matrix, sample_node_trs, triangle_sets, world_matrices
from . import model
from .moveables import TRWAD_VERSION, _pack_textures

FPS = 30.0
MAX_BAKED = 64
#: frame numbers are u16: an animation cannot span more game frames
MAX_GAME_FRAMES = 0xFFFF
#: keyframes x nodes of one animation sampled at once (bounds memory: 4x4 doubles each)
MAX_SAMPLED_TRANSFORMS = 4_000_000
_COMMAND_TYPES = {v: k for k, v in model.COMMAND_NAMES.items()}
# corner ids 0 nw, 1 ne, 2 se, 3 sw of the texture rectangle, per TR polygon corner
_QUAD = {(0, 1, 2, 3): 0, (1, 0, 3, 2): 0x8000}
_TRI = {(0, 1, 3): 0x0000, (1, 0, 2): 0x8000, (1, 2, 0): 0x2000, (0, 3, 1): 0xA000,
        (2, 3, 1): 0x4000, (3, 2, 0): 0xC000, (3, 0, 2): 0x6000, (2, 1, 3): 0xE000}


class ImportRefused(FormatError):
    """The scene cannot become a TR4 moveable."""


def from_scene(scene: Any, *, like: Any = None, out_name: str = "", **options: Any) -> dict:
    """The ``.trwad`` root of the moveable in ``scene`` (see the module docstring).
    ``like`` is a decoded ``.trwad`` root (or None) supplying what the glTF lacks."""
    given_unit = options.get("unit_scale")
    unit = float(given_unit or 1.0 / 512.0)
    rate = float(options.get("frame_rate") or FPS)
    if not (rate > 0 and math.isfinite(rate)):
        raise ImportRefused(f"frame_rate must be positive, found {rate}")
    like = like if like and "moveable" in like else None
    if not scene.nodes:
        raise ImportRefused("the scene has no mesh to import")
    world = world_matrices(scene)
    holder = _pick_holder(scene, options.get("moveable"))
    if holder is not None:
        to_tr = np.linalg.inv(world[holder])
        hx = scene.nodes[holder].extras
    else:
        if not given_unit:
            unit = _fitting_unit(scene, world, unit)
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
    frames = [_rigid(to_tr @ world[b] @ post) if b >= 0 else np.eye(4) for b in bones]
    links = _links(scene, bones, parents, frames, hx, like)

    textures = _Textures(scene, hx, like)
    meshes = _meshes(scene, world, to_tr, bones, frames, textures, holder is not None,
                     like)
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


def _fitting_unit(scene: Any, world: np.ndarray, unit: float) -> float:
    """``unit`` (metres per TR unit), or a larger one when the model would not fit
    the engine's 16-bit coordinates (a warning says so): the model's largest
    coordinate then becomes 16384 units."""
    reach = 0.0
    for ts in triangle_sets(scene, world=world):
        if len(ts.positions):
            reach = max(reach, float(np.abs(ts.positions).max()))
    if reach / unit <= 30000:
        return unit
    fitted = reach / 16384.0
    scene.warnings.append(f"the model reaches {reach:g} m, beyond the TR4 range at "
                          f"{unit:g} m per unit; imported at {fitted:g} m per unit "
                          "(set unit_scale to choose)")
    return fitted


# --------------------------------------------------------------------------
# Skeleton


def _pick_holder(scene: Any, wanted: Any) -> int | None:
    found = [i for i, nd in enumerate(scene.nodes) if "tr4_moveable" in nd.extras]
    if not found:
        return None
    if wanted is None:
        return found[0]
    from .cli import _moveable_id
    oid = _moveable_id(str(wanted))
    for i in found:
        if int(scene.nodes[i].extras["tr4_moveable"].get("object_id", -1)) == oid:
            return i
    raise ImportRefused(f"the scene holds no moveable with id {oid}")


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
    """A matrix without its scale (rotation and translation only)."""
    t, r, _ = decompose_matrix(m)
    out = np.eye(4)
    out[:3, :3] = quat_to_matrix(r)[:3, :3]
    out[:3, 3] = t
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


class _Textures:
    """Texinfos with pixels: the potsherd atlas' rectangles, baked polygons and
    solid colours, in order of first use (carried rectangles first, in order)."""

    def __init__(self, scene: Any, hx: dict, like: Any) -> None:
        self.scene = scene
        self.warnings: list[str] = []
        self.items: list[dict] = []
        self.by_key: dict[tuple, int] = {}
        self.images: dict[int, np.ndarray] = {}
        self.carried: dict[tuple, int] = {}
        self.mirrored_quad_zero = False
        for info in hx.get("tr4_textures", []) if isinstance(hx.get("tr4_textures"), list) else []:
            x, y, w, h = (int(v) for v in info["atlas"])
            self.carried[(x, y, w, h)] = len(self.items)
            self.items.append({"pending": (x, y, w, h), **{k: int(info[k]) for k in (
                "x", "y", "page", "flip_x", "w", "flip_y", "h")}})
        self.carried_count = len(self.items)

    def image(self, material: int | None) -> tuple[np.ndarray | None, tuple]:
        """(RGBA array or None, base colour) of a material."""
        if material is None or not 0 <= material < len(self.scene.materials):
            return None, (1.0, 1.0, 1.0, 1.0)
        mat = self.scene.materials[material]
        ref = mat.base_color_texture
        if ref is None or not 0 <= ref.image < len(self.scene.images):
            return None, tuple(mat.base_color)
        if ref.image not in self.images:
            img = self.scene.images[ref.image]
            arr = None
            if img.data:
                import io
                from PIL import Image
                try:
                    with Image.open(io.BytesIO(img.data)) as pil:
                        arr = np.asarray(pil.convert("RGBA"))
                except Exception:  # noqa: BLE001 - any undecodable image is reported
                    self.warnings.append(f"image {ref.image} could not be decoded; "
                                         "its polygons use the base colour")
            self.images[ref.image] = arr
        return self.images[ref.image], tuple(mat.base_color)

    def carried_index(self, material: int | None, uv: np.ndarray) -> tuple[int, tuple] | None:
        """(texture, corner ids) when a polygon's UVs are exactly the corners of a
        carried atlas rectangle."""
        if not self.carried:
            return None
        arr, _ = self.image(material)
        if arr is None:
            return None
        h, w = arr.shape[:2]
        px = uv * [w, h]
        r = np.round(px)
        if np.abs(px - r).max() > 1e-3:
            return None
        x0, y0 = r.min(0)
        x1, y1 = r.max(0)
        k = self.carried.get((int(x0), int(y0), int(x1 - x0), int(y1 - y0)))
        if k is None:
            return None
        corners = []
        for cx, cy in r:
            corners.append({(x0, y0): 0, (x1, y0): 1, (x1, y1): 2, (x0, y1): 3}[(cx, cy)]
                           if (cx, cy) in {(x0, y0), (x1, y0), (x1, y1), (x0, y1)} else -1)
        if -1 in corners:
            return None
        self._fill(k, arr)
        return k, tuple(corners)

    def _fill(self, k: int, arr: np.ndarray) -> None:
        item = self.items[k]
        if "pending" not in item:
            return
        x, y, w, h = item.pop("pending")
        block = np.zeros((h, w, 3), np.uint8)
        part = arr[y:y + h, x:x + w]
        rgb = part[..., :3].copy()
        rgb[part[..., 3] < 128] = (255, 0, 255)
        block[:rgb.shape[0], :rgb.shape[1]] = rgb
        item["pixels"] = model.rgb_to_bgr_bytes(block)

    def add(self, rgb: np.ndarray) -> int:
        """A new texture of these RGB pixels (identical ones shared)."""
        h, w = rgb.shape[:2]
        key = (w, h, rgb.tobytes())
        if key not in self.by_key:
            self.by_key[key] = len(self.items)
            self.items.append({"x": 0, "y": 0, "page": 0, "flip_x": -1, "w": w - 1,
                               "flip_y": -1, "h": h - 1, "pixels": model.rgb_to_bgr_bytes(rgb),
                               "new": True})
        return self.by_key[key]

    def solid(self, colour: tuple) -> int:
        rgb = np.clip(np.round(np.asarray(colour[:3], np.float64) * 255), 0, 255)
        return self.add(np.tile(rgb.astype(np.uint8), (4, 4, 1)))

    def bake(self, material: int | None, uv: np.ndarray) -> tuple[int, tuple]:
        """A texture holding the polygon's UV area, mapped onto the rectangle's
        corners nw, ne, sw (triangles) or nw, ne, se, sw (quads)."""
        arr, colour = self.image(material)
        if arr is None:
            return self.solid(colour), ((0, 1, 3) if len(uv) == 3 else (0, 1, 2, 3))
        ih, iw = arr.shape[:2]
        px = uv * [iw, ih]
        if len(uv) == 3:
            w = max(np.linalg.norm(px[1] - px[0]), 1.0)
            h = max(np.linalg.norm(px[2] - px[0]), 1.0)
        else:
            w = max(np.linalg.norm(px[1] - px[0]), np.linalg.norm(px[2] - px[3]), 1.0)
            h = max(np.linalg.norm(px[3] - px[0]), np.linalg.norm(px[2] - px[1]), 1.0)
        tw, th = int(min(math.ceil(w), MAX_BAKED)), int(min(math.ceil(h), MAX_BAKED))
        if math.ceil(w) > MAX_BAKED or math.ceil(h) > MAX_BAKED:
            self.shrunk = getattr(self, "shrunk", 0) + 1
        s = (np.arange(tw) + 0.5) / tw
        t = (np.arange(th) + 0.5) / th
        ss, tt = np.meshgrid(s, t)
        if len(uv) == 3:   # nw + s (ne - nw) + t (sw - nw)
            src = px[0] + ss[..., None] * (px[1] - px[0]) + tt[..., None] * (px[2] - px[0])
        else:              # bilinear over nw, ne, se, sw
            top = px[0] + ss[..., None] * (px[1] - px[0])
            bottom = px[3] + ss[..., None] * (px[2] - px[3])
            src = top + tt[..., None] * (bottom - top)
        xs = np.floor(src[..., 0]).astype(np.int64) % iw
        ys = np.floor(src[..., 1]).astype(np.int64) % ih
        texels = arr[ys, xs]
        tint = np.asarray(colour[:3], np.float64)
        rgb = np.clip(np.round(texels[..., :3] * tint), 0, 255).astype(np.uint8)
        rgb[texels[..., 3] < 128] = (255, 0, 255)
        return self.add(rgb), ((0, 1, 3) if len(uv) == 3 else (0, 1, 2, 3))

    def finish(self) -> list[dict]:
        """The texinfo list; new textures packed onto 256x256 pages after the
        carried ones (a texinfo's place is where a wad would put it)."""
        for k, item in enumerate(self.items):
            if "pending" in item:     # carried but unused: still kept, in its slot
                arr = next((a for a in self.images.values() if a is not None), None)
                if arr is None:
                    x, y, w, h = item.pop("pending")
                    item["pixels"] = bytes(3 * w * h)
                else:
                    self._fill(k, arr)
        new = [i for i, it in enumerate(self.items) if it.pop("new", False)]
        if new:
            first_page = 1 + max((it["page"] for it in self.items[:self.carried_count]),
                                 default=-1)
            places = _pack_textures([(self.items[i]["w"] + 1, self.items[i]["h"] + 1)
                                     for i in new], first_page)
            for i, (page, x, y) in zip(new, places):
                self.items[i].update(x=x, y=y, page=page)
        if getattr(self, "shrunk", 0):
            self.warnings.append(f"{self.shrunk} polygon textures were shrunk to at most "
                                 f"{MAX_BAKED}x{MAX_BAKED} pixels")
        if len(self.items) > 0x1000:
            raise ImportRefused(f"{len(self.items)} textures: a TR4 triangle can address "
                                "only 4096")
        return [{k: it[k] for k in ("x", "y", "page", "flip_x", "w", "flip_y", "h", "pixels")}
                for it in self.items]


# --------------------------------------------------------------------------
# Meshes


def _meshes(scene: Any, world: np.ndarray, to_tr: np.ndarray, bones: list, frames: list,
            textures: _Textures, ours: bool, like: Any) -> list[dict]:
    position = {b: k for k, b in enumerate(bones)}
    parents = scene.parents()
    per_bone: list[list] = [[] for _ in bones]
    for ts in triangle_sets(scene, world=world):
        tris = ts.indices.reshape(-1, 3)
        if not len(tris):
            continue
        if ts.skin is not None:
            sk = scene.skins[ts.skin]
            j = np.asarray(ts.joints, np.int64)
            w = np.asarray(ts.weights, np.float64)
            key = np.where(w == w.max(axis=1, keepdims=True), j, np.iinfo(np.int64).max)
            dom = key.min(axis=1)
            d = dom[tris]
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
            k = position.get(b, 0)
            per_bone[k].append((ts, tris[owner_nodes == node]))
    return [_mesh(scene, frames[k], to_tr, parts, textures, ours, bones[k],
                  like["meshes"][k] if like and k < len(like["meshes"]) else None)
            for k, parts in enumerate(per_bone)]


def _mesh(scene: Any, frame: np.ndarray, to_tr: np.ndarray, parts: list, textures: _Textures,
          ours: bool, bone: int, like_mesh: Any) -> dict:
    inv = np.linalg.inv(frame) @ to_tr
    rot = inv[:3, :3] / np.linalg.norm(inv[:3, :3], axis=0)
    bx = scene.nodes[bone].extras if bone >= 0 else {}
    corner_pos, corner_uv, corner_key, tri_mat, tri_shaded = [], [], [], [], []
    vertex_keys: dict[tuple, int] = {}
    verts: list[tuple] = []
    normals: list[tuple] = []
    shades: list[int] = []
    use_shades = bool(parts) and all(_shaded(scene, ts, ours, bone) for ts, _ in parts)
    for ts, tris in parts:
        if not np.isfinite(ts.positions).all():
            raise ImportRefused(f"mesh {ts.mesh} has non-finite vertex positions")
        pos = ts.positions @ inv[:3, :3].T + inv[:3, 3]
        q = np.round(pos)
        if np.abs(q).max(initial=0) > 32767:
            raise ImportRefused("a vertex lies beyond the TR4 coordinate range (+-32767 units "
                                "from its bone); pass a smaller unit_scale")
        q = q.astype(np.int64)
        if use_shades and ts.colors is not None:
            c = np.asarray(ts.colors, np.float64)
            c = c / (255.0 if c.dtype.kind in "ui" and c.max(initial=0) > 1 else 1.0)
            lum = c[:, :3].mean(1) if c.ndim == 2 else c
            attr = np.clip(np.round(8191.0 - lum * 8191.0), 0, 8191).astype(np.int64)[:, None]
        else:
            nrm = ts.normals
            if nrm is None:
                nrm = compute_normals(ts.positions, ts.indices)
            nrm = np.asarray(nrm, np.float64) @ rot.T
            length = np.linalg.norm(nrm, axis=1, keepdims=True)
            nrm = nrm / np.where(length > 0, length, 1.0)
            attr = np.round(nrm * 16384).astype(np.int64)
        uv = np.asarray(ts.uvs[0], np.float64) if ts.uvs else np.zeros((len(pos), 2))
        for tri in tris:
            ids = []
            for v in tri:
                key = (int(q[v, 0]), int(q[v, 1]), int(q[v, 2]), *(int(a) for a in attr[v]))
                if key not in vertex_keys:
                    vertex_keys[key] = len(verts)
                    verts.append(key[:3])
                    if use_shades:
                        shades.append(key[3] if len(key) == 4 else 0)
                    else:
                        normals.append(key[3:6] if len(key) == 6 else (0, -16384, 0))
                ids.append(vertex_keys[key])
            # glTF counter-clockwise (a, b, c) -> TR clockwise (a, c, b)
            corner_key.append((ids[0], ids[2], ids[1]))
            corner_uv.append(uv[[tri[0], tri[2], tri[1]]])
            corner_pos.append(q[[tri[0], tri[2], tri[1]]])
            tri_mat.append(ts.material)
    polygons = _polygons(scene, corner_key, corner_uv, corner_pos, tri_mat, textures, ours)
    if len(verts) > 0xFFFF or len(polygons) > 0xFFFF:
        raise ImportRefused(f"bone {bone}: {len(verts)} vertices and {len(polygons)} polygons; "
                            "a TR4 mesh holds at most 65535 of each")
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
    if like_mesh is not None and _same_mesh(mesh, like_mesh):
        return {k: v for k, v in like_mesh.items() if k != "pad"}
    return mesh


def _polygon_set(mesh: dict) -> list:
    v = np.asarray(mesh["vertices"]).reshape(-1, 3).tolist()
    return sorted((int(p["shape"]), tuple(tuple(v[int(i)]) for i in p["vertices"]),
                   int(p["texture"]), int(p["attributes"])) for p in mesh["polygons"])


def _same_mesh(mesh: dict, like_mesh: dict) -> bool:
    """True when an imported mesh is the original one in another vertex and
    polygon order (same polygons with textures and attributes; per position the
    same shades, or the same normal directions, a zero original normal matching
    any): the original is then kept as it was, unused vertices included."""
    try:
        nn, ln = int(mesh["normal_count"]), int(like_mesh["normal_count"])
        if (nn < 0) != (ln < 0) or _polygon_set(mesh) != _polygon_set(like_mesh):
            return False

        def per_position(m: dict, used_only: bool) -> dict:
            v = np.asarray(m["vertices"]).reshape(-1, 3).tolist()
            used = {int(i) for p in m["polygons"] for i in p["vertices"]}
            attr = np.asarray(m["shades"] if int(m["normal_count"]) < 0 else
                              m.get("normals", np.zeros((len(v), 3))), np.float64)
            out: dict = {}
            for k, p in enumerate(v):
                if used_only and k not in used or k >= len(attr):
                    continue
                out.setdefault(tuple(p), []).append(attr[k])
            return out
        mine, theirs = per_position(mesh, False), per_position(like_mesh, True)
        if set(mine) != set(theirs):
            return False
        for pos, values in theirs.items():
            for t in values:
                if nn < 0:
                    if not any(m == t for m in mine[pos]):
                        return False
                    continue
                lt = np.linalg.norm(t)
                if lt == 0 or ln == 0:
                    continue
                if not any(np.dot(m, t) / max(np.linalg.norm(m) * lt, 1e-12) > 1 - 1e-4
                           for m in mine[pos]):
                    return False
        return True
    except (KeyError, IndexError, ValueError, TypeError):
        return False


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


def _polygons(scene: Any, keys: list, uvs: list, pos: list, mats: list, textures: _Textures,
              ours: bool) -> list[dict]:
    """TR polygons from clockwise triangles: pairs sharing a diagonal become quads."""
    by_edge: dict[tuple, list[int]] = {}
    for i, k in enumerate(keys):
        for r in range(3):
            by_edge.setdefault((k[r], k[(r + 1) % 3]), []).append(i)
    used = [False] * len(keys)
    out = []
    for i, k in enumerate(keys):
        if used[i]:
            continue
        used[i] = True
        quad = None
        for r in ((0,) if ours else (0, 1, 2)):
            a, b, c = k[r], k[(r + 1) % 3], k[(r + 2) % 3]
            for j in by_edge.get((a, c), ()):
                if used[j] or j <= i or mats[j] != mats[i]:
                    continue
                kj = keys[j]
                s = kj.index(a)
                if kj[(s + 1) % 3] != c:
                    continue
                d = kj[(s + 2) % 3]
                if d in (a, b, c):
                    continue
                rot_i = [(r + t) % 3 for t in range(3)]
                quv = np.concatenate([uvs[i][rot_i], uvs[j][[(s + 2) % 3]]])
                qpos = np.concatenate([pos[i][rot_i], pos[j][[(s + 2) % 3]]])
                poly = _quad(scene, (a, b, c, d), quv, qpos, mats[i], textures, ours)
                if poly is not None:
                    quad = poly
                    used[j] = True
                    break
            if quad is not None:
                break
        out.append(quad if quad is not None else _triangle(k, uvs[i], mats[i], textures))
    return out


def _attributes(scene: Any, material: int | None) -> int:
    if material is None or not 0 <= material < len(scene.materials):
        return 0
    m = scene.materials[material]
    carried = m.extras.get("tr4_attributes")
    if isinstance(carried, int) and 0 <= carried <= 0xFF:
        return carried
    return 1 if m.extras.get("additive") or m.alpha_mode == "BLEND" else 0


def _triangle(k: tuple, uv: np.ndarray, material: int | None, textures: _Textures) -> dict:
    found = textures.carried_index(material, uv)
    flags = None
    if found is not None:
        index, corners = found
        flags = _TRI.get(corners)
    if flags is None:
        index, corners = textures.bake(material, uv)
        flags = _TRI[corners]
    return {"shape": 8, "vertices": np.asarray(k, np.uint16), "texture": flags | index,
            "attributes": _attributes(textures.scene, material), "unknown": 0}


def _quad(scene: Any, k: tuple, uv: np.ndarray, pos: np.ndarray, material: int | None,
          textures: _Textures, ours: bool) -> dict | None:
    found = textures.carried_index(material, uv)
    if found is not None:
        index, corners = found
        flags = _QUAD.get(corners)
        if flags is None or (flags and index == 0):
            return None
    else:
        if ours and textures.carried:
            return None
        p = pos.astype(np.float64)
        n1 = np.cross(p[1] - p[0], p[2] - p[0])
        n2 = np.cross(p[2] - p[0], p[3] - p[0])
        l1, l2 = np.linalg.norm(n1), np.linalg.norm(n2)
        if l1 == 0 or l2 == 0 or np.dot(n1, n2) / (l1 * l2) < 0.9999:
            return None      # not planar (or degenerate): keep two triangles
        index, corners = textures.bake(material, uv)
        flags = 0
    return {"shape": 9, "vertices": np.asarray(k, np.uint16),
            "texture": model.texture_word(9, index, flags),
            "attributes": _attributes(scene, material), "unknown": 0}


# --------------------------------------------------------------------------
# Animations


def _anim_base(mov: dict) -> int:
    a = mov.get("anim_index", 0)
    return int(a) if a is not None and int(a) >= 0 else 0


def euler_yxz(r: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices ``Ry·Rx·Rz`` to angles (x, y, z) in radians;
    at gimbal lock (x = +-90 degrees) z is 0."""
    sx = np.clip(-r[..., 1, 2], -1.0, 1.0)
    x = np.arcsin(sx)
    cx = np.sqrt(np.maximum(1 - sx * sx, 0))
    gimbal = cx < 1e-6
    y = np.where(gimbal, np.arctan2(np.sign(sx) * r[..., 0, 1], r[..., 0, 0]),
                 np.arctan2(r[..., 0, 2], r[..., 2, 2]))
    z = np.where(gimbal, 0.0, np.arctan2(r[..., 1, 0], r[..., 1, 1]))
    return np.stack([x, y, z], -1)


def rotation_words(angles: np.ndarray) -> list[list[int]]:
    """Per mesh the engine's rotation words: single-axis 12-bit when two of the
    three angles are 0 at 12 bits, else packed 10-bit (1024 = 360 degrees)."""
    out = []
    fine = np.round(np.asarray(angles) * 4096 / (2 * math.pi)).astype(np.int64) % 4096
    coarse = np.round(np.asarray(angles) * 1024 / (2 * math.pi)).astype(np.int64) % 1024
    for f, c in zip(fine, coarse):
        nz = np.flatnonzero(f)
        if len(nz) == 0:
            out.append([0x4000])                    # X only, 0
        elif len(nz) == 1:
            out.append([(0x4000 * (int(nz[0]) + 1)) | int(f[nz[0]])])
        else:
            p = (int(c[0]) << 20) | (int(c[1]) << 10) | int(c[2])
            out.append([(p >> 16) & 0x3FFF, p & 0xFFFF])
    return out


def mov_table(hx: dict) -> dict:
    """The moveable node's copy of the animation extras, by animation name."""
    rows = hx.get("tr4_animations")
    if not isinstance(rows, list):
        return {}
    return {r["name"]: {k: v for k, v in r.items() if k != "name"}
            for r in rows if isinstance(r, dict) and isinstance(r.get("name"), str)}


def _animations(scene: Any, bones: list, parents: list, meshes: list, to_tr: np.ndarray,
                post: np.ndarray, rate: float, mov: dict, like: Any,
                rate_given: bool = False, mov_extras: dict | None = None) -> tuple:
    base_anim = _anim_base(mov)
    kf_base = int(mov.get("keyframe_offset", 0) or 0)
    like_anims = like["animations"] if like else []
    like_cmds, like_changes = _like_lists(like)
    n = len(bones)
    order = _topological(scene)
    node_parents = scene.parents()
    mesh_points = [np.asarray(m["vertices"], np.float64) for m in meshes]
    anims, cmds, changes, words = [], [], [], []
    sc_index = None
    cmd_offset = None
    plan = []
    table = mov_table(mov_extras) if mov_extras else {}
    for ai, anim in enumerate(scene.animations):
        ex = anim.extras if isinstance(anim.extras, dict) else {}
        if not ex and anim.name in table:     # extras dropped by another tool
            ex = table[anim.name]
        la = like_anims[ai] if ai < len(like_anims) else None
        # keyframe spacing: the frame_rate option when given, else the carried one
        # (the timing is the glTF's, never the --like moveable's)
        carried_fd = ex.get("frame_duration")
        fd = int(carried_fd) if isinstance(carried_fd, int) and not rate_given else \
            max(1, round(FPS / rate))
        fd = max(1, min(fd, 255))
        count = ex.get("keyframe_count") if fd == carried_fd else None
        if not isinstance(count, int) or count < 0:
            duration = anim.duration if anim.channels else 0.0
            if not math.isfinite(duration) or duration * FPS > MAX_GAME_FRAMES:
                raise ImportRefused(f"animation {ai} ({anim.name!r}) lasts {duration:g} s: more "
                                    f"than the {MAX_GAME_FRAMES} game frames a TR animation "
                                    "can number")
            count = int(math.floor(duration * FPS / fd + 1e-6)) + 1 if anim.channels else 0
        if count * fd > MAX_GAME_FRAMES + fd:
            raise ImportRefused(f"animation {ai}: {count} keyframes are more than a TR "
                                "animation can number")
        if count * len(scene.nodes) > MAX_SAMPLED_TRANSFORMS:
            raise ImportRefused(f"animation {ai}: {count} keyframes of {len(scene.nodes)} nodes "
                                f"exceed the {MAX_SAMPLED_TRANSFORMS} transforms sampled at once")
        plan.append((anim, ex, la, fd, count))
    starts = []
    for anim, ex, la, fd, count in plan:
        starts.append(int(ex.get("frame_start", la["frame_start"] if la else 0)))
    kf_pos = kf_base
    for ai, (anim, ex, la, fd, count) in enumerate(plan):
        times = np.arange(count, dtype=np.float64) * fd / FPS
        frame_words: list[list[int]] = []
        if count:
            local = np.repeat(np.stack([local_matrix(nd) for nd in scene.nodes])[None],
                              count, 0)
            animated = {c.node for c in anim.channels if c.path != "weights"}
            for node in animated:
                t, r, s = sample_node_trs(scene, anim, node, times)
                local[:, node] = trs_to_matrix(t, r, s)
            world = np.empty_like(local)
            for i in order:
                p = node_parents[i]
                world[:, i] = local[:, i] if p is None else world[:, p] @ local[:, i]
            fr = np.empty((count, n, 4, 4))
            for k, b in enumerate(bones):
                if b < 0:
                    fr[:, k] = np.eye(4)
                    continue
                m = to_tr @ world[:, b] @ post
                t_, r_, _ = decompose_matrix(m)
                fr[:, k] = np.eye(4)
                fr[:, k, :3, :3] = quat_to_matrix(r_)[..., :3, :3]
                fr[:, k, :3, 3] = t_
            rel = np.empty((count, n, 3, 3))
            for k in range(n):
                rel[:, k] = fr[:, k, :3, :3] if parents[k] < 0 else \
                    np.swapaxes(fr[:, parents[k], :3, :3], -1, -2) @ fr[:, k, :3, :3]
            angles = euler_yxz(rel)
            offsets = np.round(fr[:, 0, :3, 3]).astype(np.int64)
            boxes = _boxes(fr, mesh_points)
            carried = ex.get("bboxes")
            if isinstance(carried, list) and len(carried) == count:
                cb = np.asarray(carried, np.int64).reshape(count, 6)
                if np.abs(cb - boxes).max(initial=0) <= 32:
                    boxes = cb
            like_frames = _like_keyframes(like, ai, count, n)
            for f in range(count):
                rot = rotation_words(angles[f])
                words_f = [*boxes[f].tolist(), *offsets[f].tolist(), *(w for r in rot for w in r)]
                if like_frames is not None:
                    lw, lq, loff = like_frames
                    mine = quat_from_rel(rel[f])
                    if loff[f].tolist() == offsets[f].tolist() and \
                            np.all(np.abs((mine * lq[f]).sum(-1)) > 1 - 1e-9):
                        words_f = [w & 0xFFFF for w in lw[f]]   # unchanged: the original words
                frame_words.append(words_f)
        need = max((len(w) for w in frame_words), default=0)
        fsz = int(ex.get("frame_size", need))
        if fsz < need or (count and fsz < 9):
            fsz = need
        if not count and "frame_size" not in ex:
            fsz = 9 + 2 * n
        for w in frame_words:
            words.extend(v - 0x10000 if v >= 0x8000 else v for v in w + [0] * (fsz - len(w)))
        fs = starts[ai]
        fe = int(ex.get("frame_end", fs + max(count - 1, 0) * fd))
        src = ex.get("source_indices", {}) if isinstance(ex.get("source_indices"), dict) else {}
        a_cmds = _commands(ex, fs, la, like_cmds, ai)
        a_changes = _changes(ex, fs, la, like_changes, ai, base_anim, starts, src)
        if sc_index is None:
            sc_index = int(src.get("state_change_index", la["state_change_index"] if la else 0))
            cmd_offset = int(src.get("command_offset", la["command_offset"] if la else 0))
        next_rel = int(ex.get("next_anim", (la["next_anim"] - base_anim) if la else ai))
        next_frame = ex.get("next_frame")
        target_start = starts[next_rel] if 0 <= next_rel < len(starts) else 0
        next_frame = int(next_frame) + target_start if next_frame is not None else \
            (int(la["next_frame"]) if la else target_start)
        rec = {"keyframe_offset": kf_pos, "frame_duration": fd, "frame_size": fsz,
               "state_id": int(ex.get("state_id", la["state_id"] if la else 0)),
               **{k: _fixed(ex, k, la) for k in ("speed", "accel", "speed_lateral",
                                                 "accel_lateral")},
               "frame_start": fs, "frame_end": fe,
               "next_anim": (next_rel + base_anim) & 0xFFFF, "next_frame": next_frame & 0xFFFF,
               "state_change_count": len(a_changes),
               "state_change_index": int(src.get("state_change_index", sc_index)),
               "command_count": len(a_cmds),
               "command_offset": int(src.get("command_offset", cmd_offset))}
        sc_index = rec["state_change_index"] + len(a_changes)
        cmd_offset = rec["command_offset"] + len(model.command_stream(a_cmds))
        kf_pos += 2 * fsz * count
        anims.append(rec)
        cmds.extend(a_cmds)
        changes.extend(a_changes)
    return anims, cmds, changes, words


def quat_from_rel(r: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotations as (n, 4) quaternions of their quantised TR angles."""
    angles = euler_yxz(r)
    words = rotation_words(angles)
    out = np.zeros((len(words), 3))
    for k, w in enumerate(words):
        if len(w) == 2:
            p = (w[0] << 16) | w[1]
            out[k] = [((p >> 20) & 0x3FF) * 2 * math.pi / 1024, ((p >> 10) & 0x3FF) * 2 * math.pi
                      / 1024, (p & 0x3FF) * 2 * math.pi / 1024]
        else:
            out[k, (w[0] >> 14) - 1] = (w[0] & 0xFFF) * 2 * math.pi / 4096
    return model.quaternions_yxz(out)


def _like_keyframes(like: Any, ai: int, count: int, n: int) -> tuple | None:
    """The original animation's keyframe words (padding included), decoded
    rotations and offsets, when it has ``count`` keyframes of ``n`` meshes."""
    if not like or ai >= len(like["animations"]) or int(like["moveable"]["mesh_count"]) != n:
        return None
    anims = like["animations"]
    a = anims[ai]
    base = int(like["moveable"]["keyframe_offset"])
    total = 2 * len(like["keyframe_words"])
    start = int(a["keyframe_offset"]) - base
    end = (int(anims[ai + 1]["keyframe_offset"]) - base) if ai + 1 < len(anims) else total
    fsz = int(a["frame_size"])
    if start < 0 or start % 2 or model.keyframe_count(start, fsz, end) != count or not count:
        return None
    words = np.asarray(like["keyframe_words"], np.int16)[start // 2:]
    try:
        kf = model.decode_keyframes(words, fsz, count, n)
    except FormatError:
        return None
    lw = words[:count * fsz].reshape(count, fsz).astype(np.int64).tolist()
    return lw, model.quaternions_yxz(kf["rotation"]), kf["offset"].astype(np.int64)


def _topological(scene: Any) -> list[int]:
    out = []
    stack = list(reversed(scene.roots))
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(reversed(scene.nodes[i].children))
    return out


def _boxes(frames: np.ndarray, points: list) -> np.ndarray:
    """(F, 6) min/max x, y, z of the posed meshes, rounded outward."""
    count = frames.shape[0]
    lo = np.full((count, 3), np.inf)
    hi = np.full((count, 3), -np.inf)
    for k, p in enumerate(points):
        if not len(p):
            continue
        posed = np.einsum("fij,vj->fvi", frames[:, k, :3, :3], p) + frames[:, k, None, :3, 3]
        lo = np.minimum(lo, posed.min(1))
        hi = np.maximum(hi, posed.max(1))
    lo = np.where(np.isfinite(lo), np.floor(lo), 0)
    hi = np.where(np.isfinite(hi), np.ceil(hi), 0)
    return np.clip(np.stack([lo[:, 0], hi[:, 0], lo[:, 1], hi[:, 1], lo[:, 2], hi[:, 2]], 1),
                   -32768, 32767).astype(np.int64)


def _fixed(ex: dict, key: str, la: Any) -> int:
    if key in ex:
        return int(round(float(ex[key]) * 65536.0))
    return int(la[key]) if la else 0


def _like_lists(like: Any) -> tuple[list, list]:
    """Per like animation its commands and state changes."""
    if not like:
        return [], []
    cmds = np.asarray(like["commands"]).tolist()
    changes = list(like["state_changes"])
    out_c, out_s = [], []
    ci = si = 0
    for a in like["animations"]:
        nc, ns = int(a["command_count"]), int(a["state_change_count"])
        out_c.append(cmds[ci:ci + nc])
        out_s.append(changes[si:si + ns])
        ci += nc
        si += ns
    return out_c, out_s


def _commands(ex: dict, fs: int, la: Any, like_cmds: list, ai: int) -> list[list[int]]:
    if not isinstance(ex.get("commands"), list):
        return [list(c) for c in like_cmds[ai]] if ai < len(like_cmds) else []
    out = []
    for c in ex["commands"]:
        kind = c.get("type")
        kind = _COMMAND_TYPES.get(kind, kind)
        if not isinstance(kind, int) or kind not in model.COMMAND_PARAMS:
            raise ImportRefused(f"animation command type {c.get('type')!r} is unknown")
        words = [kind, 0, 0, 0]
        if kind == 1:
            words[1:4] = [int(x) for x in c["position"]]
        elif kind == 2:
            words[1:3] = [int(x) for x in c["velocity"]]
        elif kind in (5, 6):
            words[1] = int(c["frame"]) + fs
            words[2] = (int(c["id"]) & 0x3FFF) | ((int(c.get("condition", 0)) & 3) << 14)
        pad = c.get("padding")
        if isinstance(pad, list):
            used = 1 + model.COMMAND_PARAMS[kind]
            words[used:4] = [int(x) for x in pad][:4 - used]
        out.append([w - 0x10000 if w >= 0x8000 else w for w in words])
    return out


def _changes(ex: dict, fs: int, la: Any, like_changes: list, ai: int, base: int,
             starts: list, src: dict) -> list[dict]:
    if not isinstance(ex.get("state_changes"), list):
        return [dict(s) for s in like_changes[ai]] if ai < len(like_changes) else []
    dispatch_index = src.get("dispatch_index") if isinstance(src.get("dispatch_index"), list) \
        else []
    out = []
    next_disp = 0
    for k, s in enumerate(ex["state_changes"]):
        rows = []
        for d in s.get("dispatches", []):
            rel = int(d["next_anim"])
            target = starts[rel] if 0 <= rel < len(starts) else 0
            rows.append([int(d["low"]) + fs, int(d["high"]) + fs, (rel + base) & 0xFFFF,
                         int(d["next_frame"]) + target])
        arr = np.asarray(rows, np.int64).reshape(-1, 4)
        arr = ((arr + 0x8000) & 0xFFFF) - 0x8000
        di = int(dispatch_index[k]) if k < len(dispatch_index) else next_disp
        out.append({"state_id": int(s["state_id"]), "dispatch_count": len(rows),
                    "dispatch_index": di, "dispatches": arr.astype(np.int16)})
        next_disp = di + len(rows)
    return out
