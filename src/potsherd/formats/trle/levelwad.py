"""A level's objects as a TR4 wad root, so the wad machinery (``trle extract``,
the skinned and animated moveable export) serves levels too.

What is converted, per engine:

* texture pages become the wad's 256x256 RGB pages (transparent pixels magenta,
  the wad's colour key); every object texture becomes a texinfo: the rectangle
  its corners span (corner values are 8.8 fixed point, the pixel is the high
  byte), and each polygon's texture word says which corner of that rectangle
  each vertex takes (quads: straight or mirrored; triangles: the corner
  rotation bits 13-14 and bit 15).  A corner order the wad cannot express (a
  rotated quad) takes the straight order, counted in a warning.
* meshes: the level mesh's 32-bit radius is the wad's radius and flags words;
  quads and triangles become polygons (shape 9 / 8), their effects word the
  attribute and unknown bytes.  TR1-TR3 shades become the TR4 shades that draw
  the same light (:mod:`.levellight`: TR1's 4096 is TR4's 0; TR1 light above
  the texture's is clipped and counted in a warning).  TR1-TR3 flat-coloured faces have no wad form:
  they take texture 0 (warned).
* animations, state changes, dispatches, commands, mesh trees and moveables
  keep their values under the wad's field names.  Keyframes: TR4/TR5 as
  stored; TR2/TR3 single-axis rotations (10 bits per turn) rescaled to TR4's
  12 bits; TR1 frames (a mesh count word, every rotation two words stored low
  word first) rewritten in TR4's packing, their offsets moved accordingly.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.errors import FormatError
from .layouts import WAD_LAYOUT
from .levellight import mesh_light, tr4_shades
from .levelstore import level_data
from .scene import _QUAD, _TRI

PAGE = 256


def _dtype(field: str) -> np.dtype:
    for f in WAD_LAYOUT.record("wad").fields:
        if f.name == field:
            return f.storage.table_dtype
    raise KeyError(field)


def _rgb_pages(doc: Any) -> bytes:
    from .levelpages import _pages
    pages = _pages(doc)
    if not pages:
        return b""
    px = np.stack(pages)
    rgb = px[..., :3].copy()
    rgb[px[..., 3] == 0] = (255, 0, 255)
    return rgb.tobytes()


def _corner_ids(cx: np.ndarray, cy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         np.ndarray, np.ndarray]:
    """Per object texture: rectangle (x, y, w, h as wad w/h = size - 1) and the
    corner id (0 nw, 1 ne, 2 se, 3 sw) of each of its 4 corners."""
    left, right = cx.min(1), cx.max(1)
    top, bottom = cy.min(1), cy.max(1)
    east = cx == right[:, None]
    south = cy == bottom[:, None]
    ids = np.where(south, np.where(east, 2, 3), np.where(east, 1, 0))
    return left, top, right - left, bottom - top, ids


class _Textures:
    def __init__(self, data: dict, engine: int) -> None:
        ot = data["object_textures"]
        n = len(ot)
        corners = ot["corners"].astype(np.int64).reshape(n, 4, 2) if n else np.zeros((0, 4, 2), np.int64)
        cx, cy = corners[..., 0] >> 8, corners[..., 1] >> 8
        triangle = np.zeros(n, bool)
        if n:
            # a triangle's fourth corner is zero (TR4+: also bit 15 of the tile)
            triangle = (corners[:, 3, 0] == 0) & (corners[:, 3, 1] == 0)
            if engine >= 4:
                triangle |= (ot["tile"].astype(np.int64) & 0x8000) != 0
        cx3 = np.where(triangle[:, None] & (np.arange(4) == 3), cx[:, :1], cx)
        cy3 = np.where(triangle[:, None] & (np.arange(4) == 3), cy[:, :1], cy)
        if n:
            left, top, w, h, ids = _corner_ids(cx3, cy3)
        else:
            left = top = w = h = np.zeros(0, np.int64)
            ids = np.zeros((0, 4), np.int64)
        self.ids = ids
        table = np.zeros(n, _dtype("textures"))
        table["x"], table["y"] = left, top
        table["page"] = (ot["tile"].astype(np.int64) & 0x7FFF) if n else 0
        table["w"], table["h"] = np.clip(w, 0, 255), np.clip(h, 0, 255)
        self.table = table
        self.unrepresentable = 0

    def word(self, shape: int, index: int, corners: int) -> tuple[int, int]:
        """The wad texture word of a polygon using object texture ``index``, and
        by how many places the polygon's vertices are to be rotated for it (the
        wad names fewer corner orders; a rotated vertex list is the same face)."""
        if index >= len(self.ids):
            return 0, 0
        ids = self.ids[index, :corners]
        for turn in range(corners):
            got = np.roll(ids, -turn)
            if shape == 9:
                for mirrored in (0, 1):
                    if np.array_equal(got, _QUAD[mirrored]):
                        if mirrored and 0 < index < 0x8000:
                            return 0x10000 - index, turn
                        if not mirrored:
                            return index, turn
            elif index <= 0x0FFF:
                for rot in range(4):
                    for mirrored in (0, 1):
                        if np.array_equal(got, _TRI[rot, mirrored]):
                            return index | (rot << 13) | (mirrored << 15), turn
        self.unrepresentable += 1
        return (index & 0x0FFF if shape == 8 else index & 0x7FFF), 0


def _mesh(m: dict, engine: int, tex: _Textures, counts: list) -> dict:
    polys = []

    def add(table, shape: int, is_flat: bool) -> None:
        k = 4 if shape == 9 else 3
        for row in table:
            t = int(row["texture"])
            turn = 0
            if is_flat:
                counts[0] += 1
                word = 0
            else:
                word, turn = tex.word(shape, t & (0x7FFF if engine >= 3 else 0xFFFF), k)
            effects = int(row["effects"]) if "effects" in (row.dtype.names or ()) else 0
            verts = np.roll(np.asarray(row["vertices"], np.uint16)[:k], -turn)
            polys.append({"shape": shape, "vertices": verts.copy(),
                          "texture": word, "attributes": effects & 0xFF, "unknown": effects >> 8})

    if engine <= 3:
        add(m["textured_rectangles"], 9, False)
        add(m["textured_triangles"], 8, False)
        add(m["coloured_rectangles"], 9, True)
        add(m["coloured_triangles"], 8, True)
    else:
        add(m["rectangles"], 9, False)
        add(m["triangles"], 8, False)
    radius = int(m["radius"]) & 0xFFFFFFFF
    out = {"center": np.asarray(m["center"], np.int16), "radius": radius & 0xFFFF,
           "flags": radius >> 16, "vertex_count": int(m["vertex_count"]),
           "vertices": np.asarray(m["vertices"], np.int16).reshape(-1, 3),
           "normal_count": int(m["normal_count"])}
    if out["normal_count"] > 0:
        out["normals"] = np.asarray(m["normals"], np.int16).reshape(-1, 3)
    elif out["normal_count"] < 0:
        out["shades"] = np.asarray(m["shades"], np.int16)
        if engine <= 3:          # the engine's light, as the shade TR4 draws it with
            light, brighter = mesh_light(engine, m["shades"])
            out["shades"] = tr4_shades(light)
            counts[1] += brighter
    quads = sum(1 for p in polys if p["shape"] == 9)
    out.update(polygon_count=len(polys), polygons=polys, pad=b"\x00\x00" if quads % 2 else b"")
    return out


def _mesh_bytes(m: dict) -> int:
    from .moveables import mesh_size
    return mesh_size(m, True)


def _level_mesh_offsets(data: dict, engine: int) -> list[int]:
    out, at = [], 0
    for m in data["meshes"]:
        out.append(at)
        nn = int(m["normal_count"])
        size = 12 + 2 + 6 * int(m["vertex_count"]) + (6 * nn if nn > 0 else -2 * nn)
        if engine <= 3:
            size += 8 + 10 * (len(m["textured_rectangles"]) + len(m["coloured_rectangles"]))
            size += 8 * (len(m["textured_triangles"]) + len(m["coloured_triangles"]))
        else:
            size += 4 + 12 * len(m["rectangles"]) + 10 * len(m["triangles"])
        at += size + len(m.get("pad", b""))
    return out


def _frames(data: dict, engine: int, anims: np.ndarray, moveables: np.ndarray) -> np.ndarray:
    """The keyframe words in TR4's packing (TR1/TR2/TR3 converted; offsets of
    ``anims`` and ``moveables`` moved in place for TR1)."""
    words = np.asarray(data["frame_words"], np.int16).astype(np.uint16)
    if engine >= 4:
        return words.astype(np.int16)
    owner = _owners(anims, moveables)
    if engine in (2, 3):
        out = words.copy()
        for a, n in _each_frame(anims, owner, len(words)):
            for start, size in a:
                p = start + 9
                for _ in range(n):
                    if p >= start + size or p >= len(out):
                        break
                    w = int(out[p])
                    if w & 0xC000:
                        out[p] = (w & 0xC000) | ((w & 0x03FF) << 2)
                        p += 1
                    else:
                        p += 2
        return out.astype(np.int16)
    # TR1: bbox 6, offset 3, mesh count, then 2 words per mesh (low word first)
    new: list[int] = []
    moved: dict[int, int] = {}
    for ai, (frames, n) in enumerate(_each_frame(anims, owner, len(words), tr1=True)):
        for fi, (start, size) in enumerate(frames):
            if fi == 0:
                moved[ai] = 2 * len(new)
            count = int(words[start + 9]) if start + 9 < len(words) else 0
            new.extend(int(x) for x in words[start:start + 9])
            for k in range(count):
                lo = int(words[start + 10 + 2 * k]) if start + 11 + 2 * k < len(words) else 0
                hi = int(words[start + 11 + 2 * k]) if start + 11 + 2 * k < len(words) else 0
                new.extend((hi & 0x3FFF, lo))
        if frames:
            anims["frame_size"][ai] = min(255, 9 + 2 * n)
    old_to_new = {int(anims["keyframe_offset"][ai]): off for ai, off in moved.items()}
    for ai, off in moved.items():
        anims["keyframe_offset"][ai] = off
    for mi in range(len(moveables)):
        old = int(moveables["keyframe_offset"][mi])
        if old in old_to_new:
            moveables["keyframe_offset"][mi] = old_to_new[old]
    return np.asarray(new, np.uint16).astype(np.int16)


def _owners(anims: np.ndarray, moveables: np.ndarray) -> list[int]:
    """Mesh count of the moveable owning each animation."""
    owner = [0] * len(anims)
    starts = sorted((int(m["anim_index"]), int(m["mesh_count"])) for m in moveables
                    if int(m["anim_index"]) >= 0)
    for k, (a0, n) in enumerate(starts):
        a1 = starts[k + 1][0] if k + 1 < len(starts) else len(anims)
        for a in range(max(a0, 0), min(a1, len(anims))):
            owner[a] = n
    return owner


def _each_frame(anims: np.ndarray, owner: list[int], total: int, tr1: bool = False):
    """Per animation: ([(word start, words)] of its keyframes, mesh count)."""
    offs = [int(a) // 2 for a in anims["keyframe_offset"]]
    for ai in range(len(anims)):
        n = owner[ai]
        start = offs[ai]
        later = [o for o in offs[ai + 1:] if o > start]
        end = min(later) if later else total
        size = (10 + 2 * n) if tr1 else int(anims["frame_size"][ai])
        frames = []
        if size > 0 and n > 0:
            p = start
            while p + size <= end:
                frames.append((p, size))
                p += size
        yield frames, n


def wad_root(doc: Any) -> tuple[dict, list[str]]:
    """The level's objects as a TR4 wad root (see the module) and warnings."""
    engine = doc.codec.engine
    data = level_data(doc.root)
    if not isinstance(data.get("meshes"), list):
        raise FormatError("this level's meshes did not parse; no objects to convert")
    tex = _Textures(data, engine)
    counts = [0, 0]     # flat-coloured faces, shades brighter than a TR4 shade draws
    meshes = [_mesh(m, engine, tex, counts) for m in data["meshes"]]
    level_offsets = _level_mesh_offsets(data, engine)
    index_of = {off: i for i, off in enumerate(level_offsets)}
    wad_offsets, at = [], 0
    for m in meshes:
        wad_offsets.append(at)
        at += _mesh_bytes(m)
    ptrs = []
    for p in np.asarray(data["mesh_pointers"]).tolist():
        i = index_of.get(int(p))
        ptrs.append(wad_offsets[i] if i is not None else 0)

    src = data["animations"]
    anims = np.zeros(len(src), _dtype("animations"))
    names = {"frame_offset": "keyframe_offset", "frame_rate": "frame_duration",
             "next_animation": "next_anim", "command_index": "command_offset"}
    for name in src.dtype.names:
        anims[names.get(name, name)] = src[name]
    msrc = data["moveables"]
    movs = np.zeros(len(msrc), _dtype("moveables"))
    mnames = {"first_mesh": "first_mesh_pointer", "mesh_tree_index": "links_index",
              "frame_offset": "keyframe_offset", "animation_index": "anim_index"}
    for name in msrc.dtype.names:
        if name in mnames or name in movs.dtype.names:
            movs[mnames.get(name, name)] = msrc[name]
    keyframes = _frames(data, engine, anims, movs)

    ssrc = data["statics"]
    statics = np.zeros(len(ssrc), _dtype("statics"))
    for k, axis in enumerate(("x1", "x2", "y1", "y2", "z1", "z2")):
        statics[f"visibility_{axis}"] = ssrc["visibility_box"][:, k]
        statics[f"collision_{axis}"] = ssrc["collision_box"][:, k]
    statics["object_id"], statics["mesh_pointer"], statics["flags"] = (
        ssrc["object_id"], ssrc["mesh"], ssrc["flags"])

    sc = data["state_changes"]
    disp = data["dispatches"]
    pages = _rgb_pages(doc)
    root = {
        "version": 129, "texture_count": len(tex.table), "textures": tex.table,
        "page_byte_count": len(pages), "pages": pages,
        "mesh_pointer_count": len(ptrs), "mesh_pointers": np.asarray(ptrs, np.uint32),
        "mesh_word_count": at // 2, "meshes": meshes,
        "animation_count": len(anims), "animations": anims,
        "state_change_count": len(sc),
        "state_changes": np.stack([sc["state_id"], sc["dispatch_count"], sc["dispatch_index"]],
                                  1).astype(np.uint16) if len(sc) else np.zeros((0, 3), np.uint16),
        "dispatch_count": len(disp),
        "dispatches": np.stack([disp["low"], disp["high"], disp["next_animation"],
                                disp["next_frame"]], 1).astype(np.int16)
        if len(disp) else np.zeros((0, 4), np.int16),
        "command_word_count": len(data["command_words"]),
        "command_words": np.asarray(data["command_words"], np.int16),
        "link_word_count": len(data["mesh_tree_words"]),
        "link_words": np.asarray(data["mesh_tree_words"], np.int32),
        "keyframe_word_count": len(keyframes), "keyframe_words": keyframes,
        "moveable_count": len(movs), "moveables": movs,
        "static_count": len(statics), "statics": statics,
    }
    warnings = []
    if tex.unrepresentable:
        warnings.append(f"{tex.unrepresentable} polygons use a texture corner order a wad "
                        f"cannot express; they take the straight order")
    if counts[0]:
        warnings.append(f"{counts[0]} flat-coloured faces have no wad form; they take texture 0")
    if counts[1]:
        warnings.append(f"{counts[1]} mesh shades are brighter than their texture (TR1 multiplies "
                        "by up to 2), brighter than a TR4 shade can draw; they take full "
                        "brightness")
    return root, warnings
