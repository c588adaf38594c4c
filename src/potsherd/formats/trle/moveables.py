"""Cut and paste one moveable: WAD -> ``.trwad`` (``extract``) and
``.trwad`` -> WAD (``insert``), plus a self-contained view of a moveable used
to compare the two value by value.

``extract`` writes what WadMerger writes (docs/formats/trle.md): the moveable record
and every animation keep their source-WAD indices; the link block is the
``4N - 1`` words from ``links_index`` (the last 3 belong to whatever follows);
J = N meshes, then J zero words; the textures the meshes use, each with its
pixels cut from the RGB pages and stored BGR; commands padded to 4 words;
state changes with their dispatches interleaved; no sounds (count 0).
Choices where WadMerger's behaviour is unknown (docs/formats/trle.md):

* meshes are written without the WAD's odd-quad pad (``mesh_pad=0``);
* polygon texture words are rebased onto the file's own texture list (in order
  of first use), keeping the corner and mirror bits.  A mirrored quad cannot
  refer to texture 0 (its index is stored negated), so slot 0 goes to the first
  texture no mirrored quad uses (or to an unused copy when there is none).

``insert`` adds the moveable to a WAD, or replaces the one with the same object
id in place.  Textures are deduplicated against the WAD's (same size, flips
and pixels), new ones are packed onto new pages; meshes, links, state changes,
dispatches and commands are appended and re-indexed; animations and keyframes
are spliced at the moveable's list position, because a moveable's animation and
keyframe counts are implied by the next moveable's (docs/formats/trle.md).  A replaced
moveable's meshes, links, state changes, commands and textures stay in the file
unreferenced.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ...core.errors import EncodeError, FormatError, ValueFormatError
from . import model
from .model import animation_ranges
from .layouts import odd_quads

TRWAD_VERSION = 170

# --------------------------------------------------------------------------
# Reading a moveable out of a WAD


def mesh_size(m: dict, pad: bool) -> int:
    nn = int(m["normal_count"])
    size = 16 + 6 * int(m["vertex_count"]) + (6 * nn if nn > 0 else -2 * nn)
    size += sum(14 if p["shape"] == 9 else 12 for p in m["polygons"])
    if pad and odd_quads(m["polygons"]):
        size += 2
    return size


def mesh_offsets(meshes: list) -> dict[int, int]:
    """Byte offset in the blob -> mesh index."""
    out = {}
    pos = 0
    for i, m in enumerate(meshes):
        out[pos] = i
        pos += mesh_size(m, True)
    return out


def _wad_mesh(root: dict, offsets: dict[int, int], pointer_index: int) -> dict:
    ptrs = root["mesh_pointers"]
    if not 0 <= pointer_index < len(ptrs):
        raise ValueFormatError(f"mesh pointer {pointer_index} beyond the {len(ptrs)} stored")
    off = int(ptrs[pointer_index])
    meshes = root["meshes"]
    if isinstance(meshes, (bytes, bytearray)):
        from ...core.expr import Scope
        from ...core.stream import Reader
        from .layouts import WAD_LAYOUT
        return WAD_LAYOUT.record("mesh").decode(Reader(bytes(meshes), off), Scope({"mesh_pad": 1}))
    if off not in offsets:
        raise ValueFormatError(f"mesh pointer {pointer_index} (byte {off}) is not a mesh start")
    return meshes[offsets[off]]


def find_moveable(root: dict, object_id: int) -> int:
    for i, m in enumerate(root["moveables"]):
        if int(m["object_id"]) == object_id:
            return i
    raise FormatError(f"no moveable with id {object_id} in this wad")


def keyframe_range(root: dict, a0: int, a1: int, moveable: dict) -> tuple[int, int]:
    """Byte range of a moveable's keyframes: from its keyframe offset to the
    next animation's (or the end of the array)."""
    total = 2 * len(root["keyframe_words"])
    if a1 <= a0:
        return 0, 0
    anims = root["animations"]
    start = min(int(moveable["keyframe_offset"]), int(anims[a0]["keyframe_offset"]))
    end = int(anims[a1]["keyframe_offset"]) if a1 < len(anims) else total
    if not 0 <= start <= end <= total or start % 2 or end % 2:
        raise ValueFormatError(f"keyframe range {start}..{end} is outside the {total}-byte array")
    return start, end


def extract(root: dict, object_id: int) -> dict:
    """The ``.trwad`` root of moveable ``object_id`` of a decoded WAD root."""
    mi = find_moveable(root, object_id)
    mov = model.records(root["moveables"][mi:mi + 1])[0]
    n = int(mov["mesh_count"])
    a0, a1 = animation_ranges(root)[mi]
    anims = model.records(root["animations"][a0:a1])

    links = np.asarray(root["link_words"], np.int32)
    li = int(mov["links_index"])
    want = max(4 * n - 1, 0)
    link_words = np.zeros(want, np.int32)
    part = links[li:li + want] if li < len(links) else links[:0]
    link_words[:len(part)] = part

    offsets = {} if isinstance(root["meshes"], (bytes, bytearray)) else mesh_offsets(root["meshes"])
    src_meshes = [_wad_mesh(root, offsets, int(mov["first_mesh_pointer"]) + j) for j in range(n)]
    meshes, used = _rebase_textures(src_meshes)

    pages = model.page_array(bytes(root["pages"]))
    textures = []
    for ti in used:
        if ti >= len(root["textures"]):
            raise ValueFormatError(f"a polygon refers to texture {ti}, beyond the "
                                   f"{len(root['textures'])} stored")
        info = model.records(root["textures"][ti:ti + 1])[0]
        rgb, _ = model.cut_texture(pages, info)
        textures.append({**info, "pixels": model.rgb_to_bgr_bytes(rgb)})

    commands = []
    words = np.asarray(root["command_words"])
    for a in anims:
        commands.extend(model.parse_command_stream(words, int(a["command_offset"]),
                                                   int(a["command_count"])))
    kf0, kf1 = keyframe_range(root, a0, a1, mov)
    keyframes = np.asarray(root["keyframe_words"], np.int16)[kf0 // 2:kf1 // 2].copy()

    sc = np.asarray(root["state_changes"])
    disp = np.asarray(root["dispatches"])
    changes = []
    for a in anims:
        for k in range(int(a["state_change_count"])):
            i = int(a["state_change_index"]) + k
            if i >= len(sc):
                raise ValueFormatError(f"state change {i} beyond the {len(sc)} stored")
            state_id, nd, di = (int(x) for x in sc[i])
            if di + nd > len(disp):
                raise ValueFormatError(f"dispatches {di}..{di + nd} beyond the {len(disp)} stored")
            changes.append({"state_id": state_id, "dispatch_count": nd, "dispatch_index": di,
                            "dispatches": disp[di:di + nd].astype(np.int16).copy()})

    return {
        "version": TRWAD_VERSION, "moveable_count": 1, "moveable": mov,
        "link_word_count": 4 * n - 1, "link_words": link_words,
        "mesh_count": n, "meshes": meshes, "zero_words": np.zeros(n, np.int32),
        "texture_count": len(textures), "textures": textures,
        "animation_count": len(anims), "animations": anims,
        "command_count": len(commands),
        "commands": np.asarray(commands, np.int16).reshape(-1, 4),
        "keyframe_word_count": len(keyframes), "keyframe_words": keyframes,
        "state_changes": changes, "sound_count": 0, "sound_data": b"",
    }


def _rebase_textures(src_meshes: list[dict]) -> tuple[list[dict], list[int]]:
    """Meshes (copies without the WAD pad) with texture words renumbered over
    the used textures; returns them and the source indices in new order."""
    order: list[int] = []
    mirrored: dict[int, bool] = {}
    for m in src_meshes:
        for p in m["polygons"]:
            idx, flags = model.texture_index(p["shape"], p["texture"])
            if idx not in mirrored:
                order.append(idx)
                mirrored[idx] = False
            if p["shape"] == 9 and flags & 0x8000:
                mirrored[idx] = True
    if order and mirrored[order[0]]:
        free = next((i for i in order if not mirrored[i]), None)
        if free is None:  # slot 0 gets an unused copy of the first texture
            order.insert(0, order[0])
        else:
            order.remove(free)
            order.insert(0, free)
    new_index = {old: i for i, old in enumerate(order)}
    out = []
    for m in src_meshes:
        polys = []
        for p in m["polygons"]:
            idx, flags = model.texture_index(p["shape"], p["texture"])
            polys.append({**p, "texture": model.texture_word(p["shape"], new_index[idx], flags)})
        mesh = {k: v for k, v in m.items() if k != "pad"}
        mesh["polygons"] = polys
        out.append(mesh)
    return out, order


# --------------------------------------------------------------------------
# A self-contained view of a moveable (for comparisons and for insert)


def view_from_wad(root: dict, object_id: int, resolve_external: bool = False) -> dict:
    """The moveable with indices made relative and textures resolved to pixels.

    With ``resolve_external``, animation references into other moveables
    become (owner object id, relative index) instead of absolute numbers."""
    if not resolve_external:
        return view_from_trwad(extract(root, object_id))
    spans = [(a0, a1, int(m["object_id"]))
             for m, (a0, a1) in zip(root["moveables"], animation_ranges(root)) if a1 > a0]

    def owner(a: int) -> tuple:
        for a0, a1, oid in spans:
            if a0 <= a < a1:
                return ("moveable", oid, a - a0)
        return ("absolute", a)
    return view_from_trwad(extract(root, object_id), owner)


def view_from_trwad(t: dict, owner: Any = None) -> dict:
    """A ``.trwad`` root as a self-contained moveable: meshes with textures
    resolved to (flips, size, RGB pixels, flag bits), animations with their
    commands, state changes and dispatches inline and indices relative.
    References outside the moveable stay ``("absolute", n)`` unless ``owner``
    maps them."""
    if t.get("moveable_count") != 1 or "moveable" not in t:
        raise FormatError("this .trwad holds no single moveable")
    mov = t["moveable"]
    n = int(mov["mesh_count"])
    texkeys = [(int(x["flip_x"]), int(x["flip_y"]), int(x["w"]), int(x["h"]), bytes(x["pixels"]))
               for x in t["textures"]]
    meshes = []
    for m in t["meshes"]:
        polys = []
        for p in m["polygons"]:
            idx, flags = model.texture_index(p["shape"], p["texture"])
            if idx >= len(texkeys):
                raise ValueFormatError(f"polygon texture {idx} beyond the {len(texkeys)} stored")
            polys.append((int(p["shape"]), tuple(int(v) for v in p["vertices"]), texkeys[idx],
                          flags, int(p["attributes"]), int(p["unknown"])))
        meshes.append({
            "center": tuple(int(v) for v in m["center"]), "radius": int(m["radius"]),
            "flags": int(m["flags"]), "vertices": np.asarray(m["vertices"]).tolist(),
            "normals": np.asarray(m.get("normals", [])).tolist(),
            "shades": np.asarray(m.get("shades", [])).tolist(), "polygons": polys})
    base_anim = int(mov["anim_index"])
    kf_base = int(mov["keyframe_offset"])
    count = len(t["animations"])
    cmds = np.asarray(t["commands"]).tolist()
    changes = list(t["state_changes"])

    def rel_anim(a: int) -> int | tuple:
        if 0 <= a - base_anim < count:
            return a - base_anim
        return owner(a) if owner is not None else ("absolute", a)

    anims = []
    ci = si = 0
    for a in t["animations"]:
        nc, ns = int(a["command_count"]), int(a["state_change_count"])
        sc = []
        for s in changes[si:si + ns]:
            sc.append((int(s["state_id"]),
                       [(int(d[0]), int(d[1]), rel_anim(int(d[2]) & 0xFFFF), int(d[3]))
                        for d in np.asarray(s["dispatches"]).tolist()]))
        anims.append({
            "keyframe_offset": int(a["keyframe_offset"]) - kf_base,
            **{k: int(a[k]) for k in ("frame_duration", "frame_size", "state_id", "speed", "accel",
                                      "speed_lateral", "accel_lateral", "frame_start",
                                      "frame_end", "next_frame")},
            "next_anim": rel_anim(int(a["next_anim"])),
            "commands": [tuple(c) for c in cmds[ci:ci + nc]], "state_changes": sc})
        ci += nc
        si += ns
    nlinks = 4 * max(n - 1, 0)
    return {"object_id": int(mov["object_id"]), "mesh_count": n,
            "has_animations": base_anim >= 0,
            "links": np.asarray(t["link_words"])[:nlinks].tolist(), "meshes": meshes,
            "animations": anims, "keyframe_words": np.asarray(t["keyframe_words"]).tolist()}


# --------------------------------------------------------------------------
# Inserting into a WAD


def _pack_textures(sizes: list[tuple[int, int]], first_page: int) -> list[tuple[int, int, int]]:
    """Shelf-pack (w, h) rectangles onto 256x256 pages: (page, x, y) each."""
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i][1], -sizes[i][0]))
    out: list[tuple[int, int, int] | None] = [None] * len(sizes)
    page, x, y, shelf = first_page, 0, 0, 0
    for i in order:
        w, h = sizes[i]
        if x + w > model.PAGE_SIZE:
            x, y, shelf = 0, y + shelf, 0
        if y + h > model.PAGE_SIZE:
            page, x, y, shelf = page + 1, 0, 0, 0
        out[i] = (page, x, y)
        x += w
        shelf = max(shelf, h)
    return out  # type: ignore[return-value]


def insert(root: dict, t: dict) -> dict:
    """A new WAD root: ``root`` with the ``.trwad`` moveable ``t`` added, or
    replacing the moveable with the same object id."""
    if t.get("moveable_count") != 1 or "moveable" not in t:
        raise FormatError("this .trwad holds no single moveable")
    if isinstance(root["meshes"], (bytes, bytearray)):
        raise FormatError("this wad's mesh blob did not parse; cannot insert into it")
    r = copy.copy(root)
    for key in ("textures", "animations", "moveables"):
        r[key] = model.records(root[key])  # edited row by row below
    r["meshes"] = list(root["meshes"])
    mov = t["moveable"]
    oid = int(mov["object_id"])
    n = int(mov["mesh_count"])
    if len(t["meshes"]) < n:
        raise FormatError(f"the .trwad holds {len(t['meshes'])} meshes for {n}")

    # --- textures: every .trwad texture gets its own WAD texinfo (two of them with
    # equal pixels stay two, so a re-extract gives the same list back); an
    # identical WAD texinfo is reused, the one at the texture's source place
    # first; equal pixels elsewhere get a new texinfo over them; the rest is
    # packed onto new pages
    pages = model.page_array(bytes(r["pages"]))
    existing: dict[tuple, list[int]] = {}
    at_place: dict[tuple, list[int]] = {}
    for i, info in enumerate(r["textures"]):
        rgb, ok = model.cut_texture(pages, info)
        if ok:
            key = (info["flip_x"], info["flip_y"], info["w"], info["h"], rgb.tobytes())
            existing.setdefault(key, []).append(i)
            at_place.setdefault((key, info["x"], info["y"], info["page"]), []).append(i)
    tex_map: list[int] = []
    taken: set[int] = set()
    new_tex: list[tuple[dict, np.ndarray]] = []
    for tx in t["textures"]:
        rgb = model.bgr_block(tx)
        key = (tx["flip_x"], tx["flip_y"], tx["w"], tx["h"], rgb.tobytes())
        target = next((i for i in at_place.get((key, tx["x"], tx["y"], tx["page"]), ())
                       if i not in taken), None)
        if target is None:
            target = next((i for i in existing.get(key, ()) if i not in taken), None)
        if target is None and key in existing:
            target = len(r["textures"])
            r["textures"].append(dict(r["textures"][existing[key][0]]))
            existing[key].append(target)
        if target is None:
            target = -1 - len(new_tex)  # a new texinfo, appended below
            new_tex.append((tx, rgb))
        taken.add(target)
        tex_map.append(target)
    first_new = len(r["textures"])
    tex_map = [first_new - 1 - i if i < 0 else i for i in tex_map]
    page_count = len(pages)
    if new_tex:
        places = _pack_textures([(tx["w"] + 1, tx["h"] + 1) for tx, _ in new_tex], page_count)
        extra = max(p for p, _, _ in places) + 1 - page_count
        canvas = np.zeros((extra, model.PAGE_SIZE, model.PAGE_SIZE, 3), np.uint8)
        for (tx, rgb), (page, x, y) in zip(new_tex, places):
            canvas[page - page_count, y:y + rgb.shape[0], x:x + rgb.shape[1]] = rgb
            r["textures"].append({"x": x, "y": y, "page": page, "flip_x": tx["flip_x"],
                                  "w": tx["w"], "flip_y": tx["flip_y"], "h": tx["h"]})
        r["pages"] = bytes(r["pages"]) + canvas.tobytes()
        r["page_byte_count"] = len(r["pages"])

    # --- meshes and links: appended
    first_ptr = len(r["mesh_pointers"])
    blob_bytes = 2 * int(r["mesh_word_count"])
    ptrs = []
    zero_copy = None
    for m in t["meshes"][:n]:
        polys = []
        for p in m["polygons"]:
            idx, flags = model.texture_index(p["shape"], p["texture"])
            if idx >= len(tex_map):
                raise ValueFormatError(f"polygon texture {idx} beyond the {len(tex_map)} stored")
            target = tex_map[idx]
            if target == 0 and p["shape"] == 9 and flags & 0x8000:
                # a mirrored quad cannot say texture 0: give it a duplicate texinfo
                if zero_copy is None:
                    zero_copy = len(r["textures"])
                    r["textures"].append(dict(r["textures"][0]))
                target = zero_copy
            polys.append({**p, "texture": model.texture_word(p["shape"], target, flags)})
        mesh = {**{k: v for k, v in m.items() if k != "pad"}, "polygons": polys,
                "pad": b"\0\0" if odd_quads(polys) else b""}
        ptrs.append(blob_bytes)
        blob_bytes += mesh_size(mesh, True)
        r["meshes"].append(mesh)
    if first_ptr + n > 0xFFFF:
        raise EncodeError("the wad's mesh pointer table would exceed 65535 entries")
    r["mesh_pointers"] = np.concatenate([np.asarray(r["mesh_pointers"], np.uint32),
                                         np.asarray(ptrs, np.uint32)])
    r["mesh_word_count"] = blob_bytes // 2
    links_index = len(r["link_words"])
    real_links = np.asarray(t["link_words"], np.int32)[:4 * max(n - 1, 0)]
    if len(real_links) < 4 * max(n - 1, 0):
        raise FormatError(f"the .trwad holds {len(real_links)} link words for {n} meshes")
    r["link_words"] = np.concatenate([np.asarray(r["link_words"], np.int32), real_links])

    # --- where the moveable goes: its old place, or sorted by id
    position = next((i for i, m in enumerate(r["moveables"]) if m["object_id"] == oid), None)
    replacing = position is not None
    if replacing:
        a0, a1 = animation_ranges(r)[position]
        if a1 > a0:
            k0, k1 = keyframe_range(r, a0, a1, r["moveables"][position])
        else:
            a0 = a1 = _anim_position(r, position + 1)
            k0 = k1 = _keyframe_position(r, a0)
    else:
        ids = [m["object_id"] for m in r["moveables"]]
        position = len(ids)
        if ids == sorted(ids):
            position = next((i for i, x in enumerate(ids) if x > oid), len(ids))
        a0 = a1 = _anim_position(r, position)
        k0 = k1 = _keyframe_position(r, a0)

    # --- state changes, dispatches, commands: appended; animations and
    # keyframes spliced over [a0, a1) and [k0, k1)
    src_anim = int(mov["anim_index"])
    anims_in = model.records(t["animations"])
    count = len(anims_in)
    kf_words = np.asarray(t["keyframe_words"], np.int16)
    kf_delta = 2 * len(kf_words) - (k1 - k0)
    old_total = len(r["animations"])

    def remap_old(a: np.ndarray) -> np.ndarray:
        """Old animation references after the splice (refs into a replaced
        moveable keep their relative index; out-of-range values stay)."""
        a = np.asarray(a, np.int64)
        return np.where((a >= a1) & (a < old_total), a - (a1 - a0) + count, a)

    def remap_new(a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, np.int64)
        return np.where((a >= src_anim) & (a < src_anim + count), a - src_anim + a0, a)

    old_anims = r["animations"]
    for a in old_anims:
        a["next_anim"] = int(remap_old(a["next_anim"]))
    for a in old_anims[a1:]:
        a["keyframe_offset"] += kf_delta
    disp = np.asarray(r["dispatches"], np.int16).reshape(-1, 4).copy()
    disp[:, 2] = remap_old(disp[:, 2].view(np.uint16)).astype(np.uint16).view(np.int16)
    movs = r["moveables"]
    for m in movs[position + (1 if replacing else 0):]:
        if m["anim_index"] >= 0:
            m["anim_index"] = int(remap_old(m["anim_index"]))
            if m["keyframe_offset"] >= k1:
                m["keyframe_offset"] += kf_delta

    sc_rows = [np.asarray(r["state_changes"], np.uint16).reshape(-1, 3)]
    disp_rows = [disp]
    sc_next = len(sc_rows[0])
    disp_next = len(disp)
    cmd_words = np.asarray(r["command_words"], np.int16).tolist()
    changes = list(t["state_changes"])
    cmds = np.asarray(t["commands"]).tolist()
    kf_base = int(mov["keyframe_offset"])
    new_anims = []
    ci = si = 0
    for a in anims_in:
        nc, ns = int(a["command_count"]), int(a["state_change_count"])
        na = dict(a)
        na["keyframe_offset"] = k0 + int(a["keyframe_offset"]) - kf_base
        na["next_anim"] = int(remap_new(a["next_anim"]))
        na["state_change_index"] = sc_next
        for s in changes[si:si + ns]:
            d = np.asarray(s["dispatches"], np.int16).reshape(-1, 4).copy()
            d[:, 2] = remap_new(d[:, 2].view(np.uint16)).astype(np.uint16).view(np.int16)
            sc_rows.append(np.array([[int(s["state_id"]), len(d), disp_next]], np.uint16))
            disp_rows.append(d)
            disp_next += len(d)
            sc_next += 1
        na["command_offset"] = len(cmd_words)
        cmd_words.extend(model.command_stream(cmds[ci:ci + nc]))
        ci += nc
        si += ns
        new_anims.append(na)
    for key, value in (("state_change_index", sc_next), ("command_offset", len(cmd_words)),
                       ("dispatch index", disp_next),
                       ("next_anim", old_total - (a1 - a0) + count)):
        if value > 0x10000:
            raise EncodeError(f"the wad would need {key} values beyond 65535")
    r["animations"] = old_anims[:a0] + new_anims + old_anims[a1:]
    r["state_changes"] = np.concatenate(sc_rows).astype(np.uint16)
    r["dispatches"] = np.concatenate(disp_rows).astype(np.int16)
    r["command_words"] = np.asarray(cmd_words, np.int16)
    kw = np.asarray(r["keyframe_words"], np.int16)
    r["keyframe_words"] = np.concatenate([kw[:k0 // 2], kf_words, kw[k1 // 2:]])

    new_mov = {"object_id": oid, "mesh_count": n, "first_mesh_pointer": first_ptr,
               "links_index": links_index,
               "keyframe_offset": k0 + (int(mov["keyframe_offset"]) - kf_base) if count else k0,
               "anim_index": a0 if src_anim >= 0 else -1}
    if replacing:
        movs[position] = new_mov
    else:
        movs.insert(position, new_mov)
    r["moveables"] = movs
    _set_counts(r)
    return r


def _anim_position(r: dict, position: int) -> int:
    """The first animation of the moveables from ``position`` on."""
    for m in r["moveables"][position:]:
        if m["anim_index"] >= 0:
            return int(m["anim_index"])
    return len(r["animations"])


def _keyframe_position(r: dict, anim: int) -> int:
    if anim < len(r["animations"]):
        return int(r["animations"][anim]["keyframe_offset"])
    return 2 * len(r["keyframe_words"])


def _set_counts(r: dict) -> None:
    r["texture_count"] = len(r["textures"])
    r["mesh_pointer_count"] = len(r["mesh_pointers"])
    r["animation_count"] = len(r["animations"])
    r["state_change_count"] = len(r["state_changes"])
    r["dispatch_count"] = len(r["dispatches"])
    r["command_word_count"] = len(r["command_words"])
    r["link_word_count"] = len(r["link_words"])
    r["keyframe_word_count"] = len(r["keyframe_words"])
    r["moveable_count"] = len(r["moveables"])


def empty_wad() -> dict:
    """The root of a WAD with nothing in it (version 129)."""
    return {"version": 129, "texture_count": 0, "textures": [], "page_byte_count": 0,
            "pages": b"", "mesh_pointer_count": 0, "mesh_pointers": np.zeros(0, np.uint32),
            "mesh_word_count": 0, "meshes": [], "animation_count": 0, "animations": [],
            "state_change_count": 0, "state_changes": np.zeros((0, 3), np.uint16),
            "dispatch_count": 0, "dispatches": np.zeros((0, 4), np.int16),
            "command_word_count": 0, "command_words": np.zeros(0, np.int16),
            "link_word_count": 0, "link_words": np.zeros(0, np.int32),
            "keyframe_word_count": 0, "keyframe_words": np.zeros(0, np.int16),
            "moveable_count": 0, "moveables": [], "static_count": 0, "statics": []}

