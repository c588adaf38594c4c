"""A whole Tomb Raider level (TR1-TR5) to the neutral scene (glTF).

Every room becomes a node ``room N`` holding its geometry (quads split in two
triangles, TR's clockwise faces turned counter-clockwise) with the vertex
lighting as COLOR_0 (TR1 intensity, TR2 its second intensity, TR3/TR4 RGB 555, TR5 ARGB, each
as the multiplier its engine puts on the texel (:func:`room_light`), sRGB-decoded since the game
multiplies in display space) and the
room's flags, water bit, alternate room/group and portals in ``extras``;
alternate (flipmap) rooms sit under one node ``alternate rooms`` (to hide them
together), each marked ``extras.alternate_of``.
Textures: one RGBA image per texture page (TR1 palette-indexed pages through
the 6-bit palette, TR2/TR3 ARGB 1555 pages, TR4/TR5 BGRA pages) and unlit
materials per page sampled NEAREST (alpha MASK; double sided for TR3+ faces
with bit 15 of their texture word; additive BLEND for attribute 2).  Object meshes are shared:
every static mesh placed in a room is a node ``static N`` (position and
heading) using the one glTF mesh of its object mesh; every item of a moveable
is a node ``item N`` whose children are its meshes on the mesh tree, posed by
the first keyframe of the animation the engine starts the object in (Lara:
standing; TR4/TR5 Lara shows LARA_SKIN's meshes, slot 0 holding placeholders).
Items are not animated here: ``potsherd trle extract`` cuts a moveable with its
animations into a ``.trwad`` that converts skinned and animated.  Vertex data stay in TR
space (Y down); one root turns it Y-up and scales by ``unit_scale`` (default
1/512), as the wad export does.  Flat-coloured faces of TR1-TR3 meshes use a
palette-coloured material.  The animated texture ranges are listed in the
scene's ``extras.tr_animated_textures``.  Sprites are not exported (named in
a warning).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...scene import (NEAREST, Image, Material, Mesh, Primitive, Scene, TextureRef,
                      Y_DOWN_Z_FORWARD_TO_GLTF)
from ...scene.model import Node
from ...core.errors import FormatError
from ...scene.bake_colors import lit_colors, srgb_to_linear
from .levelpages import _pages
from .levellight import brighter_warning, mesh_light, room_light
from .levelstore import level_data

class _Builder:
    def __init__(self, doc: Any, unit_scale: float) -> None:
        self.doc = doc
        self.engine = doc.codec.engine
        self.data = level_data(doc.root)
        if not self.data:       # (info and validate say it: "kept raw")
            raise FormatError("the level chunk did not parse (kept raw): no rooms or objects "
                              "to export", path="level")
        self.scene = Scene(name=doc.format)
        self.unit = unit_scale
        self.pages = _pages(doc)
        self.page_materials: dict[int, int] = {}
        self.flat_materials: dict[int, int] = {}
        ot = self.data["object_textures"]
        self.tex_tile = (ot["tile"].astype(np.int64) & 0x7FFF) if len(ot) else np.zeros(0, np.int64)
        self.tex_uv = (ot["corners"].astype(np.float32).reshape(-1, 4, 2) / 65536.0
                       if len(ot) else np.zeros((0, 4, 2), np.float32))
        self.tex_attr = ot["attribute"].astype(np.int64) if len(ot) else np.zeros(0, np.int64)
        self.images: dict[int, int] = {}
        self.brighter = 0        # room vertices the engine draws brighter than the texture
        self.brighter_mesh = 0   # and object mesh vertices (shades)

    # --- materials ----------------------------------------------------
    def page_material(self, page: int, double: bool = False, additive: bool = False) -> int:
        """One material per (page, double sided, additive): object texture
        attribute 2 blends additively (``extras.additive``), TR3+ faces with bit 15
        of their texture word are double sided."""
        key = (page, double, additive)
        if key not in self.page_materials:
            from PIL import Image as PILImage
            if page not in self.images:
                self.images[page] = self.scene.add_image(Image.from_pil(
                    PILImage.fromarray(self.pages[page], "RGBA"), name=f"page {page}"))
            extras: dict = {"tr_page": page}
            if additive:
                extras["additive"] = True
            name = f"page {page}" + (" double" if double else "") + (" additive" if additive else "")
            self.page_materials[key] = self.scene.add_material(Material(
                name=name, base_color_texture=TextureRef(
                    self.images[page], mag_filter=NEAREST, min_filter=NEAREST),
                alpha_mode="BLEND" if additive else "MASK", double_sided=double, unlit=True,
                extras=extras))
        return self.page_materials[key]

    def flat_material(self, word: int) -> int:
        """A flat-coloured face (TR1-TR3 meshes): the low byte indexes the 8-bit
        palette; TR2/TR3 draw with the 16-bit palette entry of the high byte."""
        if word not in self.flat_materials:
            r = self.doc.root
            rgb = (1.0, 1.0, 1.0)
            if self.engine >= 2 and "palette16" in r:
                p = np.asarray(r["palette16"]).reshape(256, 4)[(word >> 8) & 255]
                rgb = tuple(float(x) / 255.0 for x in p[:3])
            else:
                pal = r.get("palette", r.get("demo_palette"))
                if pal is not None:
                    p = np.asarray(pal).reshape(256, 3)[word & 255]
                    rgb = tuple(float(min(int(x) * 4, 255)) / 255.0 for x in p)
            # palette entries are display values; glTF's factor is linear light
            rgb = tuple(float(c) for c in srgb_to_linear(np.asarray(rgb)))
            self.flat_materials[word] = self.scene.add_material(Material(
                name=f"colour {word}", base_color=(*rgb, 1.0), unlit=True,
                extras={"tr_colour_word": int(word)}))
        return self.flat_materials[word]

    # --- faces to primitives -----------------------------------------
    def primitives(self, pos: np.ndarray, col: np.ndarray | None,
                   faces: list[tuple[np.ndarray, np.ndarray, bool]]) -> list[Primitive]:
        """``faces``: (vertex index rows (F, k), texture words (F,), flat?) groups."""
        groups: dict[int, list] = {}
        n_pos = len(pos)
        n_tex = len(self.tex_tile)
        for idx, tex, flat in faces:
            if not len(idx):
                continue
            k = idx.shape[1]
            idx = idx.astype(np.int64)
            ok = np.all(idx < n_pos, axis=1)
            word = tex.astype(np.int64)
            t = word & (0x7FFF if not flat else 0xFFFF)
            double = (word & 0x8000) != 0 if (self.engine >= 3 and not flat) else np.zeros(len(t), bool)
            if not flat:
                ok &= t < n_tex
            idx, t, double = idx[ok], t[ok], double[ok]
            if not len(idx):
                continue
            # corner order: (0, 2, 1) and (0, 3, 2): TR faces are clockwise
            tris = [(0, 2, 1)] if k == 3 else [(0, 2, 1), (0, 3, 2)]
            if flat:
                keys = t & 0xFFFF
                for key in np.unique(keys):
                    sel = keys == key
                    groups.setdefault(self.flat_material(int(key)), []).append(
                        (idx[sel], None, tris))
            else:
                pages = self.tex_tile[t]
                uv = self.tex_uv[t]
                additive = self.tex_attr[t] == 2
                combo = pages * 4 + double * 2 + additive
                for c in np.unique(combo):
                    page = int(c) // 4
                    if page >= len(self.pages):
                        continue
                    sel = combo == c
                    mat = self.page_material(page, bool(int(c) & 2), bool(int(c) & 1))
                    groups.setdefault(mat, []).append((idx[sel], uv[sel], tris))
        out = []
        for mat, parts in groups.items():
            P, C, U = [], [], []
            for idx, uv, tris in parts:
                for tri in tris:
                    corners = idx[:, tri]                      # (F, 3)
                    P.append(pos[corners].reshape(-1, 3))
                    if col is not None:
                        C.append(col[corners].reshape(-1, 3))
                    if uv is not None:
                        U.append(uv[:, tri].reshape(-1, 2))
                    else:
                        U.append(np.zeros((corners.size, 2), np.float32))
            prim = Primitive(positions=np.concatenate(P).astype(np.float32),
                             uvs=[np.concatenate(U).astype(np.float32)], material=mat)
            if C:
                prim.colors = np.concatenate(C).astype(np.float32)
            out.append(prim)
        return out

    # --- rooms --------------------------------------------------------
    def room_geometry(self, room: dict) -> tuple[np.ndarray, np.ndarray, list]:
        if self.engine == 5:
            body = room["body"]
            if not isinstance(body, dict) or "vertices" not in body:
                return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32), []
            verts = [lay["vertices"] for lay in body["vertices"]]
            faces = []
            base = 0
            for lay, f in zip(verts, body["faces"]):
                for arr in (f["rectangles"], f["triangles"]):
                    faces.append((arr["vertices"].astype(np.int64) + base, arr["texture"], False))
                base += len(lay)
            v = np.concatenate(verts) if verts else np.zeros(0, verts[0].dtype if verts else None)
            pos = v["position"].astype(np.float32)
            return pos, self._room_colours(v), faces
        d = room["data"]
        if not isinstance(d, dict):
            return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32), []
        v = d["vertices"]
        pos = v["position"].astype(np.float32)
        faces = [(d["rectangles"]["vertices"], d["rectangles"]["texture"], False),
                 (d["triangles"]["vertices"], d["triangles"]["texture"], False)]
        return pos, self._room_colours(v), faces

    def _room_colours(self, v: np.ndarray) -> np.ndarray:
        """COLOR_0 of a room: the engine's light multiplier, a display value (the
        game multiplies in display space), sRGB-decoded."""
        light, brighter = room_light(self.engine, v)
        self.brighter += brighter
        return lit_colors(light)

    def rooms(self, parent: int, only: int | None) -> int:
        count = 0
        alternates: dict[int, int] = {}
        for i, r in enumerate(self.data["rooms"]):
            info = r["body"] if self.engine == 5 else r
            if isinstance(info, dict) and int(info["alternate_room"]) >= 0:
                alternates.setdefault(int(info["alternate_room"]), i)
        flipped = None
        for i, room in enumerate(self.data["rooms"]):
            if only is not None and i != only:
                continue
            info = room["body"] if self.engine == 5 else room
            if not isinstance(info, dict):
                continue
            pos, col, faces = self.room_geometry(room)
            prims = self.primitives(pos, col, faces)
            extras = {"tr_room": i, "flags": int(info["flags"]), "water": bool(int(info["flags"]) & 1),
                      "alternate_room": int(info["alternate_room"]),
                      "portals": [{"to": int(p["adjoining_room"]),
                                   "normal": p["normal"].tolist(),
                                   "vertices": p["vertices"].reshape(4, 3).tolist()}
                                  for p in info["portals"]]}
            if "alternate_group" in info:
                extras["alternate_group"] = int(info["alternate_group"])
            holder = parent
            if i in alternates and alternates[i] != i:
                # the flipmap's rooms: drawn in place of their original when the map flips;
                # kept under one node so a viewer can hide them together
                extras["alternate_of"] = alternates[i]
                if flipped is None:
                    flipped = self.scene.add_node(Node(name="alternate rooms", extras={
                        "tr_flipmap": True}), parent=parent)
                holder = flipped
            node = Node(name=f"room {i}", translation=(float(info["x"]), 0.0, float(info["z"])),
                        extras=extras)
            if prims:
                node.mesh = self.scene.add_mesh(Mesh(name=f"room {i}", primitives=prims))
            self.scene.add_node(node, parent=holder)
            count += 1
        return count

    # --- object meshes --------------------------------------------------
    def mesh_at(self) -> dict[int, int]:
        """Byte offset in the mesh words -> index of the decoded mesh."""
        meshes = self.data["meshes"]
        if not isinstance(meshes, list):
            return {}
        out, at = {}, 0
        for i, m in enumerate(meshes):
            out[at] = i
            nn = int(m["normal_count"])
            size = 10 + 2 + 6 * int(m["vertex_count"]) + 2 + (6 * nn if nn > 0 else -2 * nn)
            if self.engine <= 3:
                size += 2 + 10 * len(m["textured_rectangles"]) + 2 + 8 * len(m["textured_triangles"])
                size += 2 + 10 * len(m["coloured_rectangles"]) + 2 + 8 * len(m["coloured_triangles"])
            else:
                size += 2 + 12 * len(m["rectangles"]) + 2 + 10 * len(m["triangles"])
            at += size + len(m.get("pad", b""))
        return out

    def object_mesh(self, pointer: int, cache: dict) -> int | None:
        if pointer in cache:
            return cache[pointer]
        ptrs = self.data["mesh_pointers"]
        if not (0 <= pointer < len(ptrs)):
            return None
        index = self.offsets.get(int(ptrs[pointer]))
        if index is None:
            cache[pointer] = None
            return None
        m = self.data["meshes"][index]
        pos = np.asarray(m["vertices"], dtype=np.float32).reshape(-1, 3)
        if self.engine <= 3:
            faces = [(m["textured_rectangles"]["vertices"], m["textured_rectangles"]["texture"], False),
                     (m["textured_triangles"]["vertices"], m["textured_triangles"]["texture"], False),
                     (m["coloured_rectangles"]["vertices"], m["coloured_rectangles"]["texture"], True),
                     (m["coloured_triangles"]["vertices"], m["coloured_triangles"]["texture"], True)]
        else:
            faces = [(m["rectangles"]["vertices"], m["rectangles"]["texture"], False),
                     (m["triangles"]["vertices"], m["triangles"]["texture"], False)]
        col = None
        if int(m["normal_count"]) < 0 and "shades" in m and len(m["shades"]) == len(pos):
            light, brighter = mesh_light(self.engine, m["shades"])
            self.brighter_mesh += brighter
            col = lit_colors(np.repeat(light[:, None], 3, axis=1))
        prims = self.primitives(pos, col, faces)
        cache[pointer] = self.scene.add_mesh(Mesh(name=f"mesh {pointer}", primitives=prims,
                                                  extras={"tr_mesh_pointer": pointer})) if prims else None
        return cache[pointer]

    def statics(self, parent: int, cache: dict) -> int:
        defs = {int(s["object_id"]): int(s["mesh"]) for s in self.data["statics"]}
        count = 0
        for i, room in enumerate(self.data["rooms"]):
            info = room["body"] if self.engine == 5 else room
            if not isinstance(info, dict):
                continue
            for s in info["statics"]:
                sid = int(s["static_id"])
                mesh = self.object_mesh(defs[sid], cache) if sid in defs else None
                angle = (int(s["rotation"]) & 0xFFFF) / 65536.0 * 2 * np.pi
                node = Node(name=f"static {count}", mesh=mesh,
                            translation=tuple(float(x) for x in s["position"]),
                            rotation=(0.0, float(np.sin(angle / 2)), 0.0, float(np.cos(angle / 2))),
                            extras={"tr_static": sid, "room": i})
                self.scene.add_node(node, parent=parent)
                count += 1
        return count

    def items(self, parent: int, cache: dict) -> int:
        movs = {int(m["object_id"]): m for m in self.data["moveables"]}
        poses: dict[int, Any] = {}
        count = 0
        for i, it in enumerate(self.data["items"]):
            tid = int(it["type_id"])
            angle = (int(it["angle"]) & 0xFFFF) / 65536.0 * 2 * np.pi
            node = Node(name=f"item {i}", translation=tuple(float(x) for x in it["position"]),
                        rotation=(0.0, float(np.sin(angle / 2)), 0.0, float(np.cos(angle / 2))),
                        extras={"tr_item": i, "type_id": tid, "room": int(it["room"]),
                                "flags": int(it["flags"])})
            top = self.scene.add_node(node, parent=parent)
            count += 1
            m = movs.get(tid)
            if m is None:
                continue
            if tid not in poses:
                poses[tid] = self.pose(tid, m)
            bones, offset, quats = poses[tid]
            # TR4/TR5 keep Lara's visible meshes in LARA_SKIN (8); slot 0 holds placeholders
            src = movs.get(8) if tid == 0 and self.engine >= 4 and 8 in movs else m
            first = int(src["first_mesh"])
            nodes: list[int] = []
            for k, b in enumerate(bones):
                par = top if b["parent"] < 0 else nodes[b["parent"]]
                tr = offset if k == 0 else tuple(float(c) for c in b["offset"])
                nodes.append(self.scene.add_node(Node(
                    name=f"item {i} mesh {k}", translation=tr,
                    rotation=quats[k] if quats is not None else None,
                    mesh=self.object_mesh(first + k, cache)), parent=par))
        return count

    def animated_items(self, parent: int) -> int:
        """Every item of a moveable as the wad export makes a moveable: a skinned
        mesh on its mesh-tree skeleton with every animation (``animated=1``)."""
        from ...scene import NEAREST as _N, Image as _I, TextureRef as _T
        from . import model
        from .moveables import extract
        from .scene import _Materials, _add_moveable, _block_atlas
        root = self.wad_root()
        if root is None:
            return self.items(parent, {})
        ids = {int(m["object_id"]) for m in root["moveables"]}
        types = sorted({int(it["type_id"]) for it in self.data["items"]} & ids)
        cuts = {}
        for oid in types:
            try:
                cuts[oid] = extract(root, oid)
            except Exception as e:   # noqa: BLE001 - a moveable that does not cut: posed instead
                self.scene.warnings.append(f"moveable {oid}: not exported animated ({e})")
        if 0 in cuts and self.engine >= 4 and 8 in ids:
            # TR4/TR5 Lara: slot 0 holds placeholder meshes, LARA_SKIN (8) the visible ones
            skin = extract(root, 8)
            if skin["mesh_count"] == cuts[0]["mesh_count"]:
                cuts[0] = {**cuts[0], "meshes": skin["meshes"], "zero_words": skin["zero_words"],
                           "texture_count": skin["texture_count"], "textures": skin["textures"]}
        order = list(cuts)
        atlas, rect_lists = _block_atlas([cuts[o]["textures"] for o in order])
        image = self.scene.add_image(_I.from_pil(model.image(atlas, transparent_magenta=True),
                                                 name="objects atlas"))
        materials = _Materials(self.scene, _T(image=image, mag_filter=_N, min_filter=_N))
        rects = dict(zip(order, rect_lists))
        size = (atlas.shape[1], atlas.shape[0])
        count = 0
        for i, it in enumerate(self.data["items"]):
            tid = int(it["type_id"])
            angle = (int(it["angle"]) & 0xFFFF) / 65536.0 * 2 * np.pi
            top = self.scene.add_node(Node(
                name=f"item {i}", translation=tuple(float(x) for x in it["position"]),
                rotation=(0.0, float(np.sin(angle / 2)), 0.0, float(np.cos(angle / 2))),
                extras={"tr_item": i, "type_id": tid, "room": int(it["room"]),
                        "flags": int(it["flags"])}), parent=parent)
            count += 1
            if tid in cuts:
                _add_moveable(self.scene, top, cuts[tid], rects[tid], size, materials,
                              offset=(0.0, 0.0, 0.0), prefix=True, skinned=True)
        return count

    def pose(self, tid: int, mov: dict) -> tuple[list, tuple, list | None]:
        """(bones, root offset, per-mesh quaternions) of the pose a moveable
        starts in: the first keyframe of its first animation (Lara: the
        standing animation, 11 in TR1-TR3, 103 in TR4/TR5)."""
        from . import model
        n = int(mov["mesh_count"])
        tree = np.asarray(self.data["mesh_tree_words"], np.int64)
        t0 = int(mov["mesh_tree_index"])
        links = tree[t0:t0 + 4 * max(n - 1, 0)]
        if len(links) < 4 * max(n - 1, 0):
            bones = [{"parent": -1 if j == 0 else 0, "offset": (0, 0, 0)} for j in range(n)]
        else:
            bones = model.skeleton(links, n)
        root = self.wad_root()
        a = int(mov["animation_index"])
        if tid == 0:
            start = a + (103 if self.engine >= 4 else 11)
            if root is not None and start < len(root["animations"]):
                a = start
        if root is None or a < 0 or a >= len(root["animations"]):
            return bones, (0.0, 0.0, 0.0), None
        anim = root["animations"][a]
        fsz = int(anim["frame_size"])
        words = np.asarray(root["keyframe_words"], np.int16)
        at = int(anim["keyframe_offset"]) // 2
        if fsz <= 0 or at + fsz > len(words):
            return bones, (0.0, 0.0, 0.0), None
        try:
            kf = model.decode_keyframes(words[at:], fsz, 1, n)
        except Exception:   # noqa: BLE001 - a damaged keyframe: the bind pose
            return bones, (0.0, 0.0, 0.0), None
        quats = model.quaternions_yxz(kf["rotation"])[0]
        offset = tuple(float(c) for c in kf["offset"][0])
        return bones, offset, [tuple(float(c) for c in q) for q in quats]

    def wad_root(self) -> dict | None:
        """The level's animations and keyframes in the wad's form (TR1-TR3
        keyframes converted to TR4's packing), built once."""
        if not hasattr(self, "_wad"):
            from .levelwad import wad_root
            try:
                self._wad, warnings = wad_root(self.doc)
            except Exception:   # noqa: BLE001 - the items keep their bind pose
                self._wad = None
        return self._wad


def animated_textures(words: Any) -> list[list[int]]:
    """The animated texture ranges (object texture indices cycled in turn): a
    range count, then per range its length minus one and the indices."""
    if words is None or not len(words):
        return []
    w = [int(x) for x in np.asarray(words).tolist()]
    out, p = [], 1
    for _ in range(w[0]):
        if p >= len(w):
            break
        n = w[p] + 1
        out.append(w[p + 1:p + 1 + n])
        p += 1 + n
    return out


def to_scene(doc: Any, *, unit_scale: float = 1 / 512, rooms: bool = True,
             objects: bool = True, room: int | None = None, animated: bool = False) -> Scene:
    """The level as a scene (see the module).  ``rooms``/``objects`` pick what
    is exported, ``room`` one room only; ``animated`` exports every item as a
    skinned moveable with all its animations (the wad export's form)."""
    b = _Builder(doc, unit_scale)
    s = b.scene
    u = float(unit_scale)
    top = s.add_node(Node(name=doc.format, rotation=Y_DOWN_Z_FORWARD_TO_GLTF, scale=(u, u, u),
                          extras={"tr_engine": doc.codec.engine}))
    s.roots = [top]
    b.offsets = b.mesh_at()
    cache: dict = {}
    counts = {"rooms": 0, "statics": 0, "items": 0}
    if rooms:
        counts["rooms"] = b.rooms(top, room)
    if objects and room is None:
        counts["statics"] = b.statics(top, cache)
        counts["items"] = b.animated_items(top) if animated else b.items(top, cache)
    s.extras["tr_level"] = counts
    s.extras["tr_animated_textures"] = animated_textures(b.data.get("animated_texture_words"))
    sprites = sum(len(r["data"]["sprites"]) for r in b.data["rooms"]
                  if isinstance(r.get("data"), dict) and "sprites" in r["data"])
    if sprites:
        s.warnings.append(f"{sprites} room sprites are not exported")
    if b.brighter:
        s.warnings.append(brighter_warning(b.brighter, "room vertices", b.engine))
    if b.brighter_mesh:
        s.warnings.append(brighter_warning(b.brighter_mesh, "shaded object mesh vertices",
                                           b.engine))
    if not animated:
        s.warnings.append("items are posed in the first keyframe of their starting animation "
                          "(--option animated=1 exports them skinned with their animations)")
    return s
