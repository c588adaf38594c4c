"""TR4 moveables to the neutral scene (glTF), following docs/formats/trle.md ("To glTF").

A moveable becomes a rigid node hierarchy: one node per mesh, parented by the
link walk, translated by the link offsets; each TR animation becomes a glTF
animation sampled at its keyframes (``k * frame_duration / 30`` s, LINEAR),
rotating every mesh node by ``qY * qX * qZ`` and translating mesh 0 by the
keyframe's root offset (signs and order checked: posed meshes reproduce the
engine's per-keyframe bounding boxes within a few units).  Vertex data stay in
TR space (Y down, 1024 units a sector, front toward +Z: the engine moves an
item with heading 0 along +Z); one root node turns them Y-up with a 180 degree
rotation about Z, ``(x, y, z) -> (-x, -y, z)``, so the front stays glTF's +Z
(the documented 180 degrees about X would turn it to -Z).  A proper rotation, so
nothing is mirrored and the winding is only reversed because TR faces are
clockwise (checked against the stored normals).  The root also scales by
``unit_scale`` (default 1/512: 512 units = 1 m, WADBlender's choice, which
makes Lara about 1.6 m tall).

Textures go into one RGBA atlas (magenta made transparent, ``alphaMode`` MASK):
for a ``.trwad`` its texture blocks packed onto 256-wide pages stacked
vertically, for a ``.wad`` its texture pages stacked vertically.  Polygons with
the additive attribute get a BLEND material marked ``extras.additive``.

By default (``skin=1``) a moveable is one skinned mesh per material bound to a
skeleton whose joints are the mesh-tree nodes (every vertex rigidly weighted to
its mesh's joint), so Blender shows one armature with one action per TR
animation.  The skeleton's rest pose is the one the engine starts the object
in: the first keyframe of the object's first animation (``InitialiseItem``
sets ``anim_index`` and its ``frame_base``), for Lara (object 0) animation 103,
the standing pose ``InitialiseLaraAnims`` starts her in on land.  ``skin=0``
keeps the rigid form: one node per mesh carrying its mesh, identity rest pose.

Every TR animation becomes a glTF animation, also those without keyframes (they
get the rest pose as one key and ``extras.keyframe_count`` 0), so none is
dropped; names of nodes, meshes and animations are unique (a repeated name gets
a ``.N`` suffix, the original kept in ``extras.name``).  The atlas holds only
the texture rectangles the exported meshes use, packed onto 256-wide pages;
``extras.tr4_textures`` of the materials lists each one's source texinfo, and
the extras of the moveable node, joints and animations carry what glTF cannot
express (source indices, collision spheres, link flags, state machine,
commands), so :func:`potsherd.formats.trle.importing.from_scene` can rebuild the
moveable.

Options (``export_options`` of the codecs): ``moveable`` (object id or TR4 slot
name; a ``.wad`` exports every moveable by default, each under its own node,
placed ``spacing`` TR units apart along X (default 2048) so they do not
overlap), ``unit_scale``, ``skin``.  Statics and sprites are not exported.
"""
from __future__ import annotations

from typing import Any

import math

import numpy as np

from ...core.errors import FormatError
from ...scene.bake_colors import lit_colors
from ...scene import (NEAREST, Animation, Channel, Image, Material, Mesh, Primitive, Scene,
                      Skin, TextureRef, rigid_influences, Y_DOWN_Z_FORWARD_TO_GLTF, compute_normals, quat_continuous, weld)
from . import model
from .catalog import moveable_name
from .moveables import _pack_textures, extract

FPS = 30.0

#: the animation the engine starts Lara (object 0) in on land (InitialiseLaraAnims)
LARA_START_ANIMATION = 103

# corner ids: 0 nw, 1 ne, 2 se, 3 sw (docs/formats/trle.md; TombLib's CalculateTr4UVCoordinates)
_QUAD = np.array([[0, 1, 2, 3], [1, 0, 3, 2]])
_TRI = np.array([[[0, 1, 3], [1, 0, 2]],     # bits 12-14 = 0
                 [[1, 2, 0], [0, 3, 1]],     # 2
                 [[2, 3, 1], [3, 2, 0]],     # 4
                 [[3, 0, 2], [2, 1, 3]]])    # 6

def to_scene(doc: Any, **options: Any) -> Scene:
    """A ``.trwad`` or ``.wad`` document as a scene (see the module docstring)."""
    given = options.get("unit_scale")
    if not given and doc.format == "trwad":
        # the unit scale an import chose (the sidecar it wrote): import then export
        # gives back the size the user imported
        from ...scene.import_prep import read_sidecar
        side = read_sidecar(doc.source).get("unit_scale")
        if isinstance(side, (int, float)) and math.isfinite(side) and side > 0:
            given = float(side)
    unit = float(given or 1.0 / 512.0)
    spacing = float(options.get("spacing") if options.get("spacing") is not None else 2048)
    skinned = options.get("skin", True)
    skinned = skinned if isinstance(skinned, bool) else str(skinned).strip().lower() not in (
        "0", "false", "no", "off")
    wanted = options.get("moveable")
    scene = Scene(name=doc.source or doc.format)
    if given and not options.get("unit_scale"):
        scene.warnings.append(f"unit scale {given:g} m per unit, the import's, read from the "
                              "file's .potsherd.json sidecar")
    if doc.format == "trwad":
        if "moveable" not in doc.root:
            raise FormatError("this .trwad holds no single moveable")
        movs = [doc.root]
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
    else:
        raise FormatError(f"{doc.format} files hold no moveables")
    atlas, rect_lists = _block_atlas([m["textures"] for m in movs])

    image = scene.add_image(Image.from_pil(model.image(atlas, transparent_magenta=True),
                                           name="atlas"))
    tex = TextureRef(image=image, mag_filter=NEAREST, min_filter=NEAREST)
    materials = _Materials(scene, tex)
    size = (atlas.shape[1], atlas.shape[0])
    top = scene.add_node(name="tr4", rotation=Y_DOWN_Z_FORWARD_TO_GLTF, scale=(unit, unit, unit),
                         extras={"source": "TR4 space: Y down, 1024 units per sector"})
    for i, (t, rects) in enumerate(zip(movs, rect_lists)):
        _add_moveable(scene, top, t, rects, size, materials,
                      offset=(i * spacing, 0.0, 0.0), prefix=len(movs) > 1, skinned=skinned)
    return scene.unique_names()


def _block_atlas(texture_lists: list) -> tuple[np.ndarray, list]:
    """Pack the texture blocks of every moveable (identical blocks of different
    moveables once, so a polygon's rectangle names its texture) onto
    256-wide pages stacked vertically; the last page is cut to its used rows.
    Returns the atlas and, per moveable, each texture's (x, y, w, h)."""
    blocks: dict[tuple, list[int]] = {}
    sizes: list[tuple[int, int]] = []
    pixels: list[np.ndarray] = []
    refs = []
    for textures in texture_lists:
        row: list[int] = []
        for t in textures:   # within a moveable every texture keeps its own rectangle
            key = (int(t["w"]), int(t["h"]), bytes(t["pixels"]))
            free = [b for b in blocks.get(key, ()) if b not in row]
            if not free:
                blocks.setdefault(key, []).append(len(sizes))
                free = [len(sizes)]
                sizes.append((int(t["w"]) + 1, int(t["h"]) + 1))
                pixels.append(model.bgr_block(t))
            row.append(free[0])
        refs.append(row)
    if not sizes:
        return np.zeros((1, 1, 3), np.uint8), [[] for _ in texture_lists]
    places = _pack_textures(sizes, 0)
    bottom = max(p * model.PAGE_SIZE + y + h for (p, _, y), (_, h) in zip(places, sizes))
    atlas = np.zeros((bottom, model.PAGE_SIZE, 3), np.uint8)
    rects = []
    for rgb, (w, h), (page, x, y) in zip(pixels, sizes, places):
        y += page * model.PAGE_SIZE
        atlas[y:y + h, x:x + w] = rgb
        rects.append((x, y, w, h))
    return atlas, [[rects[k] for k in row] for row in refs]


class _Materials:
    """One material per polygon attribute byte: ``textured`` (0) and ``additive``
    (1) always, others (shine bits set) on first use, named after the byte and
    carrying it in ``extras.tr4_attributes``."""

    def __init__(self, scene: Scene, tex: TextureRef) -> None:
        self.scene, self.tex = scene, tex
        self.by_attr: dict[int, int] = {}
        self.get(0)
        self.get(1)

    def get(self, attr: int) -> int:
        if attr not in self.by_attr:
            label = ("additive" if attr & 1 else "textured") + (f"_attr{attr}" if attr > 1 else "")
            extras: dict = {"additive": True} if attr & 1 else {}
            if attr > 1:
                extras["tr4_attributes"] = attr
            self.by_attr[attr] = self.scene.add_material(Material(
                name=label, base_color_texture=self.tex,
                alpha_mode="BLEND" if attr & 1 else "MASK", extras=extras))
        return self.by_attr[attr]

    def labels(self) -> list[tuple[int, str]]:
        return [(i, self.scene.materials[i].name) for i in sorted(self.by_attr.values())]


def corner_pixels(polys: list, rects: list) -> tuple[np.ndarray, np.ndarray]:
    """(P, 4, 2) atlas pixel coordinates of every polygon's corners (a
    triangle's fourth is unused), from its texture's rectangle in ``rects`` and
    the corner bits of its texture word, and (P,) whether its texture is missing
    (those get texture 0's rectangle)."""
    shape = np.array([p["shape"] for p in polys], np.int64).reshape(-1)
    word = np.array([p["texture"] for p in polys], np.int64).reshape(-1)
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
    return np.stack([np.take_along_axis(cx, corner_ids, 1),
                     np.take_along_axis(cy, corner_ids, 1)], -1), bad


def _mesh_primitives(m: dict, rects: list, size: tuple, materials: "_Materials") -> list:
    """Primitives of one TR mesh: per-corner UVs from the texture rectangles,
    quads split, winding reversed (TR faces are clockwise)."""
    polys = m["polygons"]
    if not polys:
        return []
    verts = np.asarray(m["vertices"], np.float32).reshape(-1, 3)
    shape = np.array([p["shape"] for p in polys])
    attrs = np.array([p["attributes"] for p in polys], np.int64)
    idx = np.zeros((len(polys), 4), np.int64)
    for i, p in enumerate(polys):  # one small array per polygon (3 or 4 indices)
        v = np.asarray(p["vertices"], np.int64)
        idx[i, :len(v)] = v
    quad = shape == 9
    px, bad = corner_pixels(polys, rects)
    u = px[..., 0] / size[0]
    v = px[..., 1] / size[1]
    if np.any(idx >= len(verts)):
        raise FormatError("a polygon uses a vertex index beyond the mesh's vertices")
    nn = int(m["normal_count"])
    out = []
    for value in sorted(set((attrs & 0xFF).tolist())):
        material = materials.get(int(value))
        sel = np.flatnonzero((attrs & 0xFF) == value)
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
            level = np.clip((8191.0 - shade) / 8191.0, 0.0, 1.0)   # a display brightness
            prim.colors = lit_colors(np.repeat(level[:, None], 3, 1))
        shine = (attrs[sel] >> 1) & 1
        if shine.any():
            prim.extras["shine_polygons"] = int(shine.sum())
        if bad[sel].any():
            prim.extras["missing_textures"] = int(bad[sel].sum())
        out.append(prim)
    return out


def _add_moveable(scene: Scene, top: int, t: dict, rects: list, size: tuple, materials: Any,
                  offset: tuple, prefix: bool, skinned: bool = True) -> None:
    mov = t["moveable"]
    oid = int(mov["object_id"])
    name = moveable_name(oid) or f"moveable{oid}"
    n = int(mov["mesh_count"])
    holder = scene.add_node(name=name, parent=top, translation=offset if any(offset) else None,
                            extras={"object_id": oid, "tr4_moveable": {
                                k: int(mov[k]) for k in ("object_id", "mesh_count",
                                                         "first_mesh_pointer", "links_index",
                                                         "keyframe_offset", "anim_index")},
                                "link_tail": [int(w) for w in np.asarray(
                                    t["link_words"])[4 * max(n - 1, 0):]],
                                "tr4_textures": [
                                    {"atlas": list(r), **{k: int(x[k]) for k in (
                                        "x", "y", "page", "flip_x", "w", "flip_y", "h")}}
                                    for r, x in zip(rects, t["textures"])]})
    bones = model.skeleton(t["link_words"], n) if t["link_word_count"] >= 4 * max(n - 1, 0) \
        else [{"parent": -1 if j == 0 else 0, "offset": (0, 0, 0), "flags": 0} for j in range(n)]
    if len(bones) < n:
        scene.warnings.append(f"{name}: incomplete mesh tree")
    count = min(n, len(t["meshes"]))
    decoded = _decoded_animations(scene, t, count, name)
    rest_offset, rest_quats = (0.0, 0.0, 0.0), [None] * count
    if skinned and decoded:
        start = LARA_START_ANIMATION if oid == 0 and len(decoded) > LARA_START_ANIMATION else 0
        first = decoded[start] or next((d for d in decoded if d), None)
        if first is not None:
            rest_offset = tuple(float(c) for c in first[1][0])
            rest_quats = [tuple(float(c) for c in first[2][0, j]) for j in range(count)]
    nodes: list[int] = []
    parts: list[list] = []
    for j in range(count):
        b = bones[j]
        m = t["meshes"][j]
        prims = _mesh_primitives(m, rects, size, materials)
        extras: dict = {"link_flags": b["flags"]} if b["flags"] else {}
        extras["tr4_sphere"] = [*(int(c) for c in m["center"]), int(m["radius"]), int(m["flags"])]
        parent = holder if b["parent"] < 0 else nodes[b["parent"]]
        translation = rest_offset if j == 0 and skinned else tuple(float(c) for c in b["offset"])
        if skinned:
            extras["link_offset"] = [int(c) for c in b["offset"]]
            nodes.append(scene.add_node(name=f"{name}_{j}", parent=parent,
                                        translation=translation, rotation=rest_quats[j],
                                        extras=extras))
            parts.append(prims)
        else:
            mesh = scene.add_mesh(Mesh(name=f"{name}_mesh{j}", primitives=prims)) if prims else None
            nodes.append(scene.add_node(name=f"{name}_{j}", parent=parent, mesh=mesh,
                                        translation=translation, extras=extras))
    if skinned and nodes:
        _add_skin(scene, name, nodes, parts, materials)
    first_anim = len(scene.animations)
    _add_animations(scene, t, nodes, name if prefix else "", decoded)
    # the same table on the moveable node, without the boxes: Blender keeps node
    # extras but drops animation extras when it re-exports
    scene.nodes[holder].extras["tr4_animations"] = [
        {"name": a.name, **{k: v for k, v in a.extras.items() if k != "bboxes"}}
        for a in scene.animations[first_anim:]]


def world_matrices(scene: Scene, nodes: list[int] | None = None) -> list:
    """Rest world matrix of every node (TRS chains from the roots), or with
    ``nodes`` of those nodes only (their parent chains; the rest None): a wad's
    moveables each ask for their own joints, and all nodes each time made a whole
    wad quadratic (17 s of a 22 s view of tut1.WAD)."""
    from ...scene import trs_to_matrix
    out: list = [None] * len(scene.nodes)

    def local(i: int) -> np.ndarray:
        nd = scene.nodes[i]
        return nd.matrix if nd.matrix is not None else trs_to_matrix(
            nd.translation, nd.rotation, nd.scale)

    if nodes is not None:
        parents = scene.parents()
        for want in nodes:
            chain = []
            i = want
            while i is not None and out[i] is None:
                chain.append(i)
                i = parents[i]
            world = np.eye(4) if i is None else out[i]
            for k in reversed(chain):
                world = out[k] = world @ local(k)
        return out
    stack = [(r, np.eye(4)) for r in scene.roots]
    while stack:
        i, parent = stack.pop()
        out[i] = parent @ local(i)
        stack.extend((c, out[i]) for c in scene.nodes[i].children)
    return out


def _add_skin(scene: Scene, name: str, joints: list, parts: list, materials: Any) -> None:
    """One skinned mesh per material: every part's primitives posed by its
    joint's rest matrix, rigidly weighted to that joint."""
    world = world_matrices(scene, joints)
    binds = np.stack([world[j] for j in joints])
    skin = scene.add_skin(Skin(joints=list(joints), inverse_bind_matrices=np.linalg.inv(binds),
                               skeleton=scene.parents()[joints[0]], name=f"{name}_skin"))
    for material, label in materials.labels():
        pieces = [(j, p) for j, prims in enumerate(parts) for p in prims if p.material == material]
        if not pieces:
            continue
        pos, nrm, uv, col, idx, jnt = [], [], [], [], [], []
        base = 0
        for j, p in pieces:
            m = binds[j]
            pos.append(np.asarray(p.positions, np.float64) @ m[:3, :3].T + m[:3, 3])
            rot = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)
            nrm.append(np.asarray(p.normals, np.float64) @ rot.T)
            uv.append(p.uvs[0])
            col.append(p.colors if p.colors is not None
                       else np.ones((p.vertex_count, 3), np.float32))
            idx.append(np.asarray(p.indices, np.int64) + base)
            jnt.append(np.full(p.vertex_count, j))
            base += p.vertex_count
        joints_, weights = rigid_influences(np.concatenate(jnt))
        prim = Primitive(positions=np.concatenate(pos).astype(np.float32),
                         normals=np.concatenate(nrm).astype(np.float32),
                         uvs=[np.concatenate(uv)], indices=np.concatenate(idx).astype(np.uint32),
                         joints=joints_, weights=weights, material=material)
        if any(p.colors is not None for _, p in pieces):
            prim.colors = np.concatenate(col).astype(np.float32)
            prim.extras["shaded_parts"] = [j for j, p in pieces if p.colors is not None]
        mesh = scene.add_mesh(Mesh(name=f"{name}_{label}", primitives=[prim]))
        scene.add_node(name=f"{name}_{label}", mesh=mesh, skin=skin)


def _decoded_animations(scene: Scene, t: dict, mesh_count: int, name: str) -> list:
    """Per animation: (times, root offsets (K, 3), quaternions (K, meshes, 4))
    or None when it has no decodable keyframes."""
    anims = model.records(t["animations"])
    if not anims or not mesh_count:
        return [None] * len(anims)
    mov = t["moveable"]
    base = int(mov["keyframe_offset"])
    total = 2 * len(t["keyframe_words"])
    words = np.asarray(t["keyframe_words"], np.int16)
    out: list = []
    for i, a in enumerate(anims):
        start = int(a["keyframe_offset"]) - base
        end = (int(anims[i + 1]["keyframe_offset"]) - base) if i + 1 < len(anims) else total
        fsz = int(a["frame_size"])
        count = model.keyframe_count(start, fsz, end) if start >= 0 else 0
        item = None
        if count > 0 and start % 2 == 0:
            try:
                kf = model.decode_keyframes(words[start // 2:], fsz, count, mesh_count)
            except FormatError as e:
                scene.warnings.append(f"{name} animation {i}: keyframes not decoded ({e.message})")
                kf = None
            if kf is not None:
                times = np.arange(count, dtype=np.float64) * max(int(a["frame_duration"]), 1) / FPS
                quats = model.quaternions_yxz(kf["rotation"])
                for j in range(mesh_count):
                    quats[:, j] = quat_continuous(quats[:, j])
                item = (times, kf["offset"].astype(np.float64), quats, kf["bbox"])
        out.append(item)
    return out


def _add_animations(scene: Scene, t: dict, nodes: list, prefix: str, decoded: list) -> None:
    anims = model.records(t["animations"])
    if not anims or not nodes:
        return
    first = int(t["moveable"]["anim_index"])
    base = int(t["moveable"]["keyframe_offset"])
    cmds = np.asarray(t["commands"]).tolist()
    changes = list(t["state_changes"])
    ci = si = 0
    for i, (a, dec) in enumerate(zip(anims, decoded)):
        nc, ns = int(a["command_count"]), int(a["state_change_count"])
        fs = int(a["frame_start"])
        extras = {
            "state_id": int(a["state_id"]), "frame_duration": int(a["frame_duration"]),
            "frame_size": int(a["frame_size"]), "keyframe_offset": int(a["keyframe_offset"]) - base,
            "keyframe_count": 0 if dec is None else len(dec[0]),
            "frame_start": fs, "frame_end": int(a["frame_end"]),
            "speed": a["speed"] / 65536.0, "accel": a["accel"] / 65536.0,
            "speed_lateral": a["speed_lateral"] / 65536.0,
            "accel_lateral": a["accel_lateral"] / 65536.0,
            "next_anim": int(a["next_anim"]) - first,
            "next_frame": int(a["next_frame"]) - _frame_start(anims, int(a["next_anim"]) - first),
            "commands": [_rebased_command(c, fs) for c in cmds[ci:ci + nc]],
            "source_indices": {"state_change_index": int(a["state_change_index"]),
                               "command_offset": int(a["command_offset"]),
                               "dispatch_index": [int(s["dispatch_index"])
                                                  for s in changes[si:si + ns]]},
            "state_changes": [{"state_id": int(s["state_id"]), "dispatches": [
                {"low": int(d[0]) - fs, "high": int(d[1]) - fs,
                 "next_anim": (int(d[2]) & 0xFFFF) - first,
                 "next_frame": int(d[3]) - _frame_start(anims, (int(d[2]) & 0xFFFF) - first)}
                for d in np.asarray(s["dispatches"]).tolist()]} for s in changes[si:si + ns]],
        }
        ci += nc
        si += ns
        anim = Animation(name=f"{prefix}/anim{i:03d}" if prefix else f"anim{i:03d}", extras=extras)
        if dec is not None:
            times, offsets, quats, boxes = dec
            extras["bboxes"] = np.asarray(boxes).tolist()
            anim.channels.append(Channel(nodes[0], "translation", times,
                                         offsets.astype(np.float32)))
            for j, node in enumerate(nodes):
                anim.channels.append(Channel(node, "rotation", times,
                                             quats[:, j].astype(np.float32)))
        else:  # no keyframes: one key of the rest pose, so the animation is kept
            zero = np.zeros(1)
            nd = scene.nodes[nodes[0]]
            anim.channels.append(Channel(nodes[0], "translation", zero,
                                         np.asarray([nd.translation or (0.0, 0.0, 0.0)],
                                                    np.float32)))
        scene.add_animation(anim)


def _frame_start(anims: list, rel: int) -> int:
    return int(anims[rel]["frame_start"]) if 0 <= rel < len(anims) else 0


def _rebased_command(c: list, frame_start: int) -> dict:
    kind = int(c[0])
    out: dict[str, Any] = {"type": model.COMMAND_NAMES.get(kind, kind)}
    used = 1 + model.COMMAND_PARAMS.get(kind, 3)
    if any(int(x) for x in c[used:4]):
        out["padding"] = [int(x) for x in c[used:4]]
    if kind == 1:
        out["position"] = [int(c[1]), int(c[2]), int(c[3])]
    elif kind == 2:
        out["velocity"] = [int(c[1]), int(c[2])]
    elif kind in (5, 6):
        out["frame"] = int(c[1]) - frame_start
        out["id"] = int(c[2]) & 0x3FFF
        out["condition"] = (int(c[2]) & 0xC000) >> 14
    return out
