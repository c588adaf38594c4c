"""TR4 moveables to the neutral scene (glTF), following notes/trle.md section 6.

A moveable becomes a rigid node hierarchy: one node per mesh, parented by the
link walk, translated by the link offsets; each TR animation becomes a glTF
animation sampled at its keyframes (``k * frame_duration / 30`` s, LINEAR),
rotating every mesh node by ``qY * qX * qZ`` and translating mesh 0 by the
keyframe's root offset (signs and order checked: posed meshes reproduce the
engine's per-keyframe bounding boxes within a few units).  Vertex data stay in
TR space (Y down, 1024 units a sector, front toward +Z: the engine moves an
item with heading 0 along +Z); one root node turns them Y-up with a 180 degree
rotation about Z, ``(x, y, z) -> (-x, -y, z)``, so the front stays glTF's +Z
(note 6's 180 degrees about X would turn it to -Z).  A proper rotation, so
nothing is mirrored and the winding is only reversed because TR faces are
clockwise (checked against the stored normals).  The root also scales by
``unit_scale`` (default 1/512: 512 units = 1 m, WADBlender's choice, which
makes Lara about 1.6 m tall).

Textures go into one RGBA atlas (magenta made transparent, ``alphaMode`` MASK):
for a ``.trwad`` its texture blocks packed onto 256-wide pages stacked
vertically, for a ``.wad`` its texture pages stacked vertically.  Polygons with
the additive attribute get a BLEND material marked ``extras.additive``.

Options: ``moveable`` (object id or TR4 slot name; a ``.wad`` exports every
moveable by default, each under its own node, placed ``spacing`` TR units
apart along X (default 2048) so they do not overlap), ``unit_scale``.
Statics and sprites are not exported.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.errors import FormatError
from ...scene import (NEAREST, Animation, Channel, Image, Material, Mesh, Primitive, Scene,
                      TextureRef, Y_DOWN_Z_FORWARD_TO_GLTF, compute_normals, quat_continuous, weld)
from . import model
from .catalog import moveable_name
from .moveables import _pack_textures, extract

FPS = 30.0

# corner ids: 0 nw, 1 ne, 2 se, 3 sw (note 6, TombLib's CalculateTr4UVCoordinates)
_QUAD = np.array([[0, 1, 2, 3], [1, 0, 3, 2]])
_TRI = np.array([[[0, 1, 3], [1, 0, 2]],     # bits 12-14 = 0
                 [[1, 2, 0], [0, 3, 1]],     # 2
                 [[2, 3, 1], [3, 2, 0]],     # 4
                 [[3, 0, 2], [2, 1, 3]]])    # 6


def to_scene(doc: Any, **options: Any) -> Scene:
    """A ``.trwad`` or ``.wad`` document as a scene (see the module docstring)."""
    unit = float(options.get("unit_scale") or 1.0 / 512.0)
    spacing = float(options.get("spacing") if options.get("spacing") is not None else 2048)
    wanted = options.get("moveable")
    scene = Scene(name=doc.source or doc.format)
    if doc.format == "trwad":
        if "moveable" not in doc.root:
            raise FormatError("this .trwad holds no single moveable")
        movs = [doc.root]
        atlas, rects = _block_atlas(doc.root["textures"])
        rect_lists = [rects]
    elif doc.format == "tr4wad":
        root = doc.root
        if isinstance(root["meshes"], (bytes, bytearray)):
            raise FormatError("this wad's mesh blob did not parse; nothing to export")
        ids = [int(m["object_id"]) for m in root["moveables"]]
        if wanted is not None:
            from .catalog import moveable_id
            oid = moveable_id(str(wanted))
            if oid not in ids:
                raise FormatError(f"no moveable with id {oid} in this wad")
            ids = [oid]
        movs = [extract(root, oid) for oid in ids]
        pages = model.page_array(bytes(root["pages"]))
        atlas = pages.reshape(-1, model.PAGE_SIZE, 3) if len(pages) else np.zeros((1, 1, 3), np.uint8)
        rect_lists = [[(t["x"], t["page"] * model.PAGE_SIZE + t["y"], t["w"] + 1, t["h"] + 1)
                       for t in m["textures"]] for m in movs]
    else:
        raise FormatError(f"{doc.format} files hold no moveables")

    image = scene.add_image(Image.from_pil(model.image(atlas, transparent_magenta=True),
                                           name="atlas"))
    tex = TextureRef(image=image, mag_filter=NEAREST, min_filter=NEAREST)
    solid = scene.add_material(Material(name="textured", base_color_texture=tex,
                                        alpha_mode="MASK"))
    additive = scene.add_material(Material(name="additive", base_color_texture=tex,
                                           alpha_mode="BLEND", extras={"additive": True}))
    size = (atlas.shape[1], atlas.shape[0])
    top = scene.add_node(name="tr4", rotation=Y_DOWN_Z_FORWARD_TO_GLTF, scale=(unit, unit, unit),
                         extras={"source": "TR4 space: Y down, 1024 units per sector"})
    for i, (t, rects) in enumerate(zip(movs, rect_lists)):
        _add_moveable(scene, top, t, rects, size, (solid, additive),
                      offset=(i * spacing, 0.0, 0.0), prefix=len(movs) > 1)
    return scene


def _block_atlas(textures: list) -> tuple[np.ndarray, list]:
    """Pack ``.trwad`` texture blocks onto 256-wide pages stacked vertically."""
    if not textures:
        return np.zeros((1, 1, 3), np.uint8), []
    sizes = [(t["w"] + 1, t["h"] + 1) for t in textures]
    places = _pack_textures(sizes, 0)
    pages = max(p for p, _, _ in places) + 1
    atlas = np.zeros((pages * model.PAGE_SIZE, model.PAGE_SIZE, 3), np.uint8)
    rects = []
    for t, (w, h), (page, x, y) in zip(textures, sizes, places):
        y += page * model.PAGE_SIZE
        atlas[y:y + h, x:x + w] = model.bgr_block(t)
        rects.append((x, y, w, h))
    return atlas, rects


def _mesh_primitives(m: dict, rects: list, size: tuple, materials: tuple) -> list:
    """Primitives of one TR mesh: per-corner UVs from the texture rectangles,
    quads split, winding reversed (TR faces are clockwise)."""
    polys = m["polygons"]
    if not polys:
        return []
    verts = np.asarray(m["vertices"], np.float32).reshape(-1, 3)
    shape = np.array([p["shape"] for p in polys])
    word = np.array([p["texture"] for p in polys], np.int64)
    attrs = np.array([p["attributes"] for p in polys], np.int64)
    idx = np.zeros((len(polys), 4), np.int64)
    for i, p in enumerate(polys):  # one small array per polygon (3 or 4 indices)
        v = np.asarray(p["vertices"], np.int64)
        idx[i, :len(v)] = v
    quad = shape == 9
    mirrored = (word & 0x8000) != 0
    tex = np.where(quad & mirrored, (0x10000 - word) & 0xFFFF, np.where(quad, word, word & 0x0FFF))
    corner_ids = np.where(quad[:, None], _QUAD[mirrored.astype(int)],
                          np.pad(_TRI[(word >> 13) & 3, mirrored.astype(int)], ((0, 0), (0, 1))))
    r = np.asarray(rects, np.float64).reshape(-1, 4) if rects else np.zeros((1, 4))
    bad = tex >= len(rects)
    tex = np.where(bad, 0, tex)
    x, y, w, h = (r[tex, k] for k in range(4)) if len(rects) else (np.zeros(len(polys)),) * 4
    cx = np.stack([x, x + w, x + w, x], 1)
    cy = np.stack([y, y, y + h, y + h], 1)
    u = np.take_along_axis(cx, corner_ids, 1) / size[0]
    v = np.take_along_axis(cy, corner_ids, 1) / size[1]
    if np.any(idx >= len(verts)):
        raise FormatError("a polygon uses a vertex index beyond the mesh's vertices")
    nn = int(m["normal_count"])
    out = []
    for flag, material in ((0, materials[0]), (1, materials[1])):
        sel = np.flatnonzero((attrs & 1) == flag)
        if not len(sel):
            continue
        q = quad[sel]
        # corners per polygon: (tri: 0,1,2) (quad: 0,1,2 + 0,2,3), reversed to CCW
        tri_p = np.concatenate([sel, sel[q]])
        tri_c = np.concatenate([np.tile([0, 2, 1], (len(sel), 1)),
                                np.tile([0, 3, 2], (int(q.sum()), 1))])
        corner_poly = np.repeat(tri_p, 3)
        corner_k = tri_c.reshape(-1)
        vidx = idx[corner_poly, corner_k]
        uv = np.stack([u[corner_poly, corner_k], v[corner_poly, corner_k]], 1).astype(np.float32)
        first, remap = weld(vidx, uv)
        positions = verts[vidx[first]]
        prim = Primitive(positions=positions, indices=remap.astype(np.uint32), uvs=[uv[first]],
                         material=material)
        if nn > 0:
            normals = np.asarray(m["normals"], np.float64)[vidx[first]]
            length = np.linalg.norm(normals, axis=1, keepdims=True)
            prim.normals = np.where(length > 0, normals / np.where(length > 0, length, 1),
                                    [0.0, -1.0, 0.0]).astype(np.float32)
        else:
            prim.normals = compute_normals(positions, prim.indices)
        if nn < 0:
            shade = np.asarray(m["shades"], np.float64)[vidx[first]]
            level = np.clip((8191.0 - shade) / 8191.0, 0.0, 1.0)
            prim.colors = np.repeat(level[:, None], 3, 1).astype(np.float32)
        shine = (attrs[sel] >> 1) & 1
        if shine.any():
            prim.extras["shine_polygons"] = int(shine.sum())
        if bad[sel].any():
            prim.extras["missing_textures"] = int(bad[sel].sum())
        out.append(prim)
    return out


def _add_moveable(scene: Scene, top: int, t: dict, rects: list, size: tuple, materials: tuple,
                  offset: tuple, prefix: bool) -> None:
    mov = t["moveable"]
    oid = int(mov["object_id"])
    name = moveable_name(oid) or f"moveable{oid}"
    n = int(mov["mesh_count"])
    holder = scene.add_node(name=name, parent=top, translation=offset if any(offset) else None,
                            extras={"object_id": oid})
    bones = model.skeleton(t["link_words"], n) if t["link_word_count"] >= 4 * max(n - 1, 0) \
        else [{"parent": -1 if j == 0 else 0, "offset": (0, 0, 0), "flags": 0} for j in range(n)]
    if len(bones) < n:
        scene.warnings.append(f"{name}: incomplete mesh tree")
    nodes: list[int] = []
    for j in range(min(n, len(t["meshes"]))):
        b = bones[j]
        prims = _mesh_primitives(t["meshes"][j], rects, size, materials)
        mesh = scene.add_mesh(Mesh(name=f"{name}_mesh{j}", primitives=prims)) if prims else None
        parent = holder if b["parent"] < 0 else nodes[b["parent"]]
        nodes.append(scene.add_node(name=f"{name}_{j}", parent=parent, mesh=mesh,
                                    translation=tuple(float(c) for c in b["offset"]),
                                    extras={"link_flags": b["flags"]} if b["flags"] else {}))
    _add_animations(scene, t, nodes, name if prefix else "")


def _add_animations(scene: Scene, t: dict, nodes: list, prefix: str) -> None:
    anims = t["animations"]
    if not anims or not nodes:
        return
    mov = t["moveable"]
    base = int(mov["keyframe_offset"])
    first = int(mov["anim_index"])
    total = 2 * len(t["keyframe_words"])
    words = np.asarray(t["keyframe_words"], np.int16)
    cmds = np.asarray(t["commands"]).tolist()
    changes = list(t["state_changes"])
    ci = si = 0
    for i, a in enumerate(anims):
        start = int(a["keyframe_offset"]) - base
        end = (int(anims[i + 1]["keyframe_offset"]) - base) if i + 1 < len(anims) else total
        nc, ns = int(a["command_count"]), int(a["state_change_count"])
        fs = int(a["frame_start"])
        extras = {
            "state_id": int(a["state_id"]), "frame_duration": int(a["frame_duration"]),
            "frame_start": fs, "frame_end": int(a["frame_end"]),
            "speed": a["speed"] / 65536.0, "accel": a["accel"] / 65536.0,
            "speed_lateral": a["speed_lateral"] / 65536.0,
            "accel_lateral": a["accel_lateral"] / 65536.0,
            "next_anim": int(a["next_anim"]) - first,
            "next_frame": int(a["next_frame"]) - _frame_start(anims, int(a["next_anim"]) - first),
            "commands": [_rebased_command(c, fs) for c in cmds[ci:ci + nc]],
            "state_changes": [{"state_id": int(s["state_id"]), "dispatches": [
                {"low": int(d[0]) - fs, "high": int(d[1]) - fs,
                 "next_anim": (int(d[2]) & 0xFFFF) - first,
                 "next_frame": int(d[3]) - _frame_start(anims, (int(d[2]) & 0xFFFF) - first)}
                for d in np.asarray(s["dispatches"]).tolist()]} for s in changes[si:si + ns]],
        }
        ci += nc
        si += ns
        anim = Animation(name=f"{prefix}/anim{i:03d}" if prefix else f"anim{i:03d}", extras=extras)
        fsz = int(a["frame_size"])
        count = model.keyframe_count(start, fsz, end) if start >= 0 else 0
        if count > 0 and start % 2 == 0:
            try:
                kf = model.decode_keyframes(words[start // 2:], fsz, count, len(nodes))
            except FormatError as e:
                scene.warnings.append(f"{anim.name}: keyframes not decoded ({e.message})")
                kf = None
            if kf is not None:
                times = np.arange(count, dtype=np.float64) * max(int(a["frame_duration"]), 1) / FPS
                anim.channels.append(Channel(nodes[0], "translation", times,
                                             kf["offset"].astype(np.float32)))
                quats = model.quaternions_yxz(kf["rotation"])
                for j, node in enumerate(nodes):
                    anim.channels.append(Channel(node, "rotation", times,
                                                 quat_continuous(quats[:, j]).astype(np.float32)))
        scene.add_animation(anim)


def _frame_start(anims: list, rel: int) -> int:
    return int(anims[rel]["frame_start"]) if 0 <= rel < len(anims) else 0


def _rebased_command(c: list, frame_start: int) -> dict:
    kind = int(c[0])
    out: dict[str, Any] = {"type": model.COMMAND_NAMES.get(kind, kind)}
    if kind == 1:
        out["position"] = [int(c[1]), int(c[2]), int(c[3])]
    elif kind == 2:
        out["velocity"] = [int(c[1]), int(c[2])]
    elif kind in (5, 6):
        out["frame"] = int(c[1]) - frame_start
        out["id"] = int(c[2]) & 0x3FFF
        out["condition"] = (int(c[2]) & 0xC000) >> 14
    return out
