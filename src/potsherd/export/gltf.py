"""glTF 2.0 writer: one :class:`~potsherd.scene.Scene` to ``.glb`` or ``.gltf``.

The writer only encodes; coordinate conventions are the scene's (see
:mod:`potsherd.scene`).  It does fix what would make a file invalid rather
than merely different, and records each fix in ``scene.warnings``: it
normalises normals, quaternions and skin weights, drops repeated animation
times, replaces non-finite floats, and drops empty primitives/meshes/channels.

Layout: one buffer; one buffer view per accessor (tightly packed, offsets
aligned to 4 bytes, ``target`` set for vertex and index data); images are
embedded in the buffer (``.glb``) or written as separate PNG files
(``.gltf``, default) or embedded (``external_images=False``).
"""
from __future__ import annotations

import json
import math
import os
import struct
from typing import Any

import numpy as np

from ..core.plainjson import plain_json
from ..core.errors import EncodeError, FormatError
from ..core.fileio import atomic_write, atomic_write_all
from ..errors import NoSceneError, SceneExportError
from ..scene.bake_colors import unit_colors
from ..scene.model import Scene
from ..scene.ops import faces_apart
from ..scene.xform import decompose_matrix, mat4_to_gltf, quat_normalize
from .gltf_names import _finite, _safe_name, _uri_stem, unique_names, valid_text

ARRAY_BUFFER = 34962
ELEMENT_ARRAY_BUFFER = 34963

_COMPONENT = {np.dtype(np.int8): 5120, np.dtype(np.uint8): 5121, np.dtype(np.int16): 5122,
              np.dtype(np.uint16): 5123, np.dtype(np.uint32): 5125,
              np.dtype(np.float32): 5126}
_TYPE = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 16: "MAT4"}

GLB_MAGIC = 0x46546C67
CHUNK_JSON = 0x4E4F534A
CHUNK_BIN = 0x004E4942


_jsonable = plain_json  # extras: see potsherd.core.plainjson


def _floats(values: Any) -> list:
    return [float(x) for x in np.asarray(values, dtype=np.float64).reshape(-1)]


class _Writer:
    def __init__(self, scene: Scene, binary: bool, image_files: dict | None) -> None:
        self.scene = scene
        self.binary = binary
        self.image_files = image_files
        self.bin = bytearray()
        self.views: list = []
        self.accessors: list = []
        self.warnings: list = scene.warnings
        self.extensions: set = set()
        self._repairs: dict = {}
        self._time_inputs: dict = {}

    def warn(self, where: str, what: str, count: int | None = None) -> None:
        """Record a repair; repeats of one kind are summarised by :meth:`flush_warnings`."""
        self._repairs.setdefault(what, []).append((where, count))

    def flush_warnings(self) -> None:
        for what, places in self._repairs.items():
            counts = [c for _, c in places if c is not None]
            total = f"{sum(counts)} " if counts else ""
            if len(places) == 1:
                msg = f"{places[0][0]}: {total}{what}"
            else:
                shown = ", ".join(w for w, _ in places[:3])
                msg = (f"{total}{what} in {len(places)} places ({shown}"
                       f"{', ...' if len(places) > 3 else ''})")
            if msg not in self.warnings:
                self.warnings.append(msg)
        self._repairs = {}

    # ---- buffer -------------------------------------------------------------
    def view(self, data: bytes, target: int | None = None) -> int:
        pad = (-len(self.bin)) % 4
        self.bin += b"\0" * pad
        v: dict = {"buffer": 0, "byteOffset": len(self.bin), "byteLength": len(data)}
        if target is not None:
            v["target"] = target
        self.bin += data
        self.views.append(v)
        return len(self.views) - 1

    def accessor(self, array: np.ndarray, ncomp: int, *, target: int | None = None,
                 normalized: bool = False, minmax: bool = False, where: str = "") -> int:
        a = np.ascontiguousarray(array)
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("="))
        if a.dtype not in _COMPONENT:
            raise EncodeError(f"unsupported component type {a.dtype}", path=where)
        if a.dtype.kind == "f":
            bad = ~np.isfinite(a)
            if bad.any():
                self.warn(where, "non-finite values replaced by 0", int(bad.sum()))
                a = np.where(bad, 0, a).astype(a.dtype)
        count = a.size // ncomp
        if count == 0:
            raise EncodeError("empty accessor", path=where)
        acc: dict = {"bufferView": self.view(a.tobytes(), target),
                     "componentType": _COMPONENT[a.dtype], "count": count,
                     "type": _TYPE[ncomp]}
        if normalized:
            acc["normalized"] = True
        if minmax:
            m = a.reshape(count, ncomp)
            acc["min"] = [x.item() for x in m.min(axis=0)]
            acc["max"] = [x.item() for x in m.max(axis=0)]
        self.accessors.append(acc)
        return len(self.accessors) - 1

    # ---- attributes ---------------------------------------------------------
    def vec_f32(self, arr: Any, n: int, where: str, *, minmax: bool = False,
                target: int | None = ARRAY_BUFFER) -> int:
        a = np.asarray(arr, dtype=np.float32)
        if a.ndim != 2 or a.shape[1] != n:
            raise EncodeError(f"expected shape (N, {n}), found {a.shape}", path=where)
        return self.accessor(a, n, target=target, minmax=minmax, where=where)

    def normals(self, arr: Any, where: str) -> int:
        n = np.asarray(arr, dtype=np.float64)
        if n.ndim != 2 or n.shape[1] != 3:
            raise EncodeError(f"expected shape (N, 3), found {n.shape}", path=where)
        n = np.where(np.isfinite(n), n, 0.0)
        length = np.linalg.norm(n, axis=1, keepdims=True)
        zero = length[:, 0] < 1e-12
        if zero.any():
            self.warn(where, "zero-length normals replaced by +Y", int(zero.sum()))
        n = np.where(zero[:, None], np.array([0.0, 1.0, 0.0]), n / np.where(zero, 1.0, length[:, 0])[:, None])
        return self.accessor(n.astype(np.float32), 3, target=ARRAY_BUFFER, where=where)

    def colors(self, arr: Any, where: str) -> int:
        c = np.asarray(arr)
        if c.ndim != 2 or c.shape[1] not in (3, 4):
            raise EncodeError(f"expected shape (N, 3) or (N, 4), found {c.shape}", path=where)
        if c.dtype in (np.uint8, np.uint16) and c.shape[1] == 4:
            return self.accessor(c, 4, target=ARRAY_BUFFER, normalized=True, where=where)
        c = np.clip(np.nan_to_num(unit_colors(c)), 0.0, 1.0).astype(np.float32)
        return self.accessor(c, c.shape[1], target=ARRAY_BUFFER, where=where)

    def skin_sets(self, joints: Any, weights: Any, njoints: int | None, where: str) -> dict:
        j = np.asarray(joints, dtype=np.int64)
        w = np.asarray(weights, dtype=np.float64)
        if j.shape != w.shape or j.ndim != 2:
            raise EncodeError(f"joints {j.shape} and weights {w.shape} differ", path=where)
        n, k = w.shape
        w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
        if k % 4:
            j = np.concatenate([j, np.zeros((n, 4 - k % 4), np.int64)], axis=1)
            w = np.concatenate([w, np.zeros((n, 4 - k % 4))], axis=1)
            k = w.shape[1]
        # merge duplicate joints within a vertex (glTF forbids them)
        for a in range(k):
            for b in range(a + 1, k):
                dup = (j[:, a] == j[:, b]) & (w[:, b] > 0) & (w[:, a] > 0)
                if dup.any():
                    w[dup, a] += w[dup, b]
                    w[dup, b] = 0.0
        s = w.sum(axis=1)
        none = s <= 0
        if none.any():
            self.warn(where, "vertices without weights bound to joint 0", int(none.sum()))
            w[none, 0] = 1.0
            j[none, 0] = 0
            s = w.sum(axis=1)
        w = w / s[:, None]
        j = np.where(w > 0, j, 0)
        if njoints is not None and (j.min() < 0 or j.max() >= njoints):
            raise EncodeError(f"joint index {int(j.max())} outside the skin's {njoints} joints",
                              path=where)
        w32 = w.astype(np.float32)
        # put the float32 rounding residue on each vertex's largest weight
        big = np.argmax(w32, axis=1)
        resid = (1.0 - w32.astype(np.float64).sum(axis=1)).astype(np.float32)
        w32[np.arange(n), big] += resid
        jdt = np.uint8 if j.max(initial=0) < 256 else np.uint16
        out = {}
        for s_i in range(k // 4):
            cols = slice(4 * s_i, 4 * s_i + 4)
            out[f"JOINTS_{s_i}"] = self.accessor(j[:, cols].astype(jdt), 4, target=ARRAY_BUFFER,
                                                 where=f"{where}.JOINTS_{s_i}")
            out[f"WEIGHTS_{s_i}"] = self.accessor(np.ascontiguousarray(w32[:, cols]), 4,
                                                  target=ARRAY_BUFFER,
                                                  where=f"{where}.WEIGHTS_{s_i}")
        return out

    def indices(self, arr: Any, nverts: int, where: str) -> int:
        i = np.asarray(arr).reshape(-1)
        if i.size and (i.min() < 0 or i.max() >= nverts):
            raise EncodeError(f"index {int(i.max()) if i.max() >= nverts else int(i.min())} "
                              f"outside {nverts} vertices", path=where)
        dt = np.uint16 if nverts < 65535 else np.uint32
        return self.accessor(i.astype(dt), 1, target=ELEMENT_ARRAY_BUFFER, where=where)

    # ---- objects ------------------------------------------------------------
    def images(self) -> list:
        out = []
        used_names: set = set()
        for ii, img in enumerate(self.scene.images):
            d: dict = {}
            if img.name:
                d["name"] = img.name
            if img.uri is not None and img.data is None:
                d["uri"] = img.uri
            elif img.data is None:
                raise EncodeError("image has neither data nor uri", path=f"images[{ii}]")
            elif self.image_files is not None:
                base = _safe_name(img.name) or f"image{ii}"
                ext = ".png" if img.mime_type == "image/png" else ".jpg"
                uri = base + ext
                n = 1
                while uri.lower() in used_names:
                    n += 1
                    uri = f"{base}_{n}{ext}"
                used_names.add(uri.lower())
                self.image_files[uri] = bytes(img.data)
                d["uri"] = uri
            else:
                d["bufferView"] = self.view(bytes(img.data))
                d["mimeType"] = img.mime_type
            if img.extras:
                d["extras"] = _jsonable(img.extras)
            out.append(d)
        return out

    def materials(self) -> tuple:
        mats, textures, samplers = [], [], []
        tex_key: dict = {}
        samp_key: dict = {}
        for mi, m in enumerate(self.scene.materials):
            pbr: dict = {}
            bc = _floats(m.base_color)
            if len(bc) == 3:
                bc.append(1.0)
            bc = [min(max(x, 0.0), 1.0) if math.isfinite(x) else 1.0 for x in bc]
            if bc != [1.0, 1.0, 1.0, 1.0]:
                pbr["baseColorFactor"] = bc
            pbr["metallicFactor"] = float(min(max(m.metallic, 0.0), 1.0))
            pbr["roughnessFactor"] = float(min(max(m.roughness, 0.0), 1.0))
            d: dict = {"pbrMetallicRoughness": pbr}
            self.extra_texture_slots(m, mi, pbr, d, textures, samplers, tex_key, samp_key)
            if m.name:
                d["name"] = m.name
            if m.alpha_mode not in ("OPAQUE", "MASK", "BLEND"):
                raise EncodeError(f"alpha mode {m.alpha_mode!r}", path=f"materials[{mi}]")
            if m.alpha_mode != "OPAQUE":
                d["alphaMode"] = m.alpha_mode
            if m.alpha_mode == "MASK" and m.alpha_cutoff != 0.5:
                d["alphaCutoff"] = float(max(m.alpha_cutoff, 0.0))
            if m.double_sided:
                d["doubleSided"] = True
            em = [min(max(x, 0.0), 1.0) for x in _floats(m.emissive)]
            if any(em):
                d["emissiveFactor"] = em
            if m.unlit:
                d["extensions"] = {"KHR_materials_unlit": {}}
                self.extensions.add("KHR_materials_unlit")
            if m.extras:
                d["extras"] = _jsonable(m.extras)
            mats.append(d)
        return mats, textures, samplers

    def extra_texture_slots(self, m: Any, mi: int, pbr: dict, d: dict, textures: list,
                            samplers: list, tex_key: dict, samp_key: dict) -> None:
        """Every texture slot of a material (base colour, metallic-roughness, normal,
        occlusion, emissive), sharing one list of textures and samplers."""
        slots = (("base_color_texture", "baseColorTexture", pbr, None),
                 ("metallic_roughness_texture", "metallicRoughnessTexture", pbr, None),
                 ("normal_texture", "normalTexture", d, "scale"),
                 ("occlusion_texture", "occlusionTexture", d, "strength"),
                 ("emissive_texture", "emissiveTexture", d, None))
        for attr, key, into, factor in slots:
            t = getattr(m, attr, None)
            if t is None:
                continue
            if not 0 <= t.image < len(self.scene.images):
                raise EncodeError(f"texture image {t.image} does not exist",
                                  path=f"materials[{mi}].{attr}")
            sk = (t.mag_filter, t.min_filter, t.wrap_s, t.wrap_t)
            if sk not in samp_key:
                s: dict = {"wrapS": t.wrap_s, "wrapT": t.wrap_t}
                if t.mag_filter is not None:
                    s["magFilter"] = t.mag_filter
                if t.min_filter is not None:
                    s["minFilter"] = t.min_filter
                samp_key[sk] = len(samplers)
                samplers.append(s)
            tk = (t.image, samp_key[sk])
            if tk not in tex_key:
                tex_key[tk] = len(textures)
                textures.append({"source": t.image, "sampler": samp_key[sk]})
            ref: dict = {"index": tex_key[tk]}
            if t.texcoord:
                ref["texCoord"] = int(t.texcoord)
            extras = dict(t.extras)
            if factor is not None and factor in extras:
                value = extras.pop(factor)
                if isinstance(value, (int, float)) and math.isfinite(value) and value != 1:
                    ref[factor] = float(value)
            if extras:
                ref["extras"] = _jsonable(extras)
            into[key] = ref
            if attr == "emissive_texture" and not any(_floats(m.emissive)):
                d["emissiveFactor"] = [1.0, 1.0, 1.0]  # glTF multiplies the texture by it

    def meshes(self) -> tuple:
        """Returns (glTF meshes, map scene mesh index -> glTF index or None)."""
        out, remap = [], []
        skinned_meshes: dict = {}     # mesh -> fewest joints among the skins using it
        for n in self.scene.nodes:
            if n.skin is not None and n.mesh is not None and 0 <= n.skin < len(self.scene.skins):
                nj = len(self.scene.skins[n.skin].joints)
                skinned_meshes[n.mesh] = min(nj, skinned_meshes.get(n.mesh, nj))
        for mi, mesh in enumerate(self.scene.meshes):
            prims = []
            ntargets = max((len(p.targets) for p in mesh.primitives), default=0)
            for pi, p in enumerate(mesh.primitives):
                where = f"meshes[{mi}].primitives[{pi}]"
                pos = np.asarray(p.positions)
                if pos.ndim != 2 or pos.shape[1] != 3:
                    raise EncodeError(f"positions must be (N, 3), found {pos.shape}", path=where)
                p = _faces_apart(p)                # Blender would drop repeated faces
                pos = np.asarray(p.positions)
                nv = len(pos)
                if nv == 0 or (p.indices is not None and np.asarray(p.indices).size == 0):
                    self.warn(where, "empty primitive dropped")
                    continue
                attrs = {"POSITION": self.vec_f32(pos, 3, where + ".POSITION", minmax=True)}
                if p.normals is not None:
                    attrs["NORMAL"] = self.normals(p.normals, where + ".NORMAL")
                uvs = list(p.uvs)
                mat = self.scene.materials[p.material] if p.material is not None else None
                if p.material is not None and not 0 <= p.material < len(self.scene.materials):
                    raise EncodeError(f"material {p.material} does not exist", path=where)
                if mat is not None and _texcoords_needed(mat):
                    need = _texcoords_needed(mat)
                    if len(uvs) < need:
                        self.warn(where, "textured material without its TEXCOORD set; zero UVs added")
                        uvs += [np.zeros((nv, 2), np.float32)] * (need - len(uvs))
                for ui, uv in enumerate(uvs):
                    attrs[f"TEXCOORD_{ui}"] = self.vec_f32(uv, 2, f"{where}.TEXCOORD_{ui}")
                if p.colors is not None:
                    attrs["COLOR_0"] = self.colors(p.colors, where + ".COLOR_0")
                if p.joints is not None and p.weights is not None:
                    attrs.update(self.skin_sets(p.joints, p.weights, skinned_meshes.get(mi), where))
                elif mi in skinned_meshes:
                    self.warn(where, "primitive of a skinned mesh without weights bound to joint 0")
                    attrs.update(self.skin_sets(np.zeros((nv, 4)), np.tile([1.0, 0, 0, 0], (nv, 1)),
                                                None, where))
                for name, a in attrs.items():
                    if self.accessors[a]["count"] != nv:
                        raise EncodeError(f"{name} has {self.accessors[a]['count']} rows, "
                                          f"POSITION has {nv}", path=where)
                prim: dict = {"attributes": attrs}
                if p.indices is not None:
                    prim["indices"] = self.indices(p.indices, nv, where + ".indices")
                if p.material is not None:
                    prim["material"] = int(p.material)
                if p.mode != 4:
                    prim["mode"] = int(p.mode)
                if ntargets:
                    tl = []
                    for ti in range(ntargets):
                        tw = f"{where}.targets[{ti}]"
                        t = p.targets[ti] if ti < len(p.targets) else None
                        tpos = t.positions if t is not None and t.positions is not None \
                            else np.zeros((nv, 3), np.float32)
                        if t is None:
                            self.warn(tw, "missing morph target filled with zeros")
                        td = {"POSITION": self.vec_f32(tpos, 3, tw + ".POSITION", minmax=True)}
                        if t is not None and t.normals is not None:
                            td["NORMAL"] = self.vec_f32(t.normals, 3, tw + ".NORMAL")
                        if any(self.accessors[a]["count"] != nv for a in td.values()):
                            raise EncodeError("morph target size differs from POSITION", path=tw)
                        tl.append(td)
                    prim["targets"] = tl
                if p.extras:
                    prim["extras"] = _jsonable(p.extras)
                prims.append(prim)
            if not prims:
                self.warn(f"meshes[{mi}] ({mesh.name!r})",
                          "mesh without drawable primitive dropped")
                remap.append(None)
                continue
            d: dict = {"primitives": prims}
            if mesh.name:
                d["name"] = mesh.name
            if ntargets:
                w = list(mesh.weights or [])
                w = (_floats(w) + [0.0] * ntargets)[:ntargets]
                d["weights"] = w
            extras = dict(mesh.extras)
            if mesh.target_names:
                extras["targetNames"] = [str(x) for x in mesh.target_names]
            if extras:
                d["extras"] = _jsonable(extras)
            remap.append(len(out))
            out.append(d)
        return out, remap

    def check_tree(self) -> None:
        parent: dict = {}
        nn = len(self.scene.nodes)
        for i, n in enumerate(self.scene.nodes):
            for c in n.children:
                if not 0 <= c < nn:
                    raise EncodeError(f"child {c} does not exist", path=f"nodes[{i}].children")
                if c in parent:
                    raise EncodeError(f"node {c} has two parents ({parent[c]} and {i})",
                                      path=f"nodes[{i}].children")
                parent[c] = i
        for r in self.scene.roots:
            if not 0 <= r < nn or r in parent:
                raise EncodeError(f"root {r} is not a parentless node", path="roots")
        # cycles: walk up from every node
        for i in range(nn):
            seen = 0
            j = i
            while j in parent:
                j = parent[j]
                seen += 1
                if seen > nn:
                    raise EncodeError("node hierarchy has a cycle", path=f"nodes[{i}]")

    def nodes(self, mesh_remap: list, animated: set) -> list:
        out = []
        for i, n in enumerate(self.scene.nodes):
            d: dict = {}
            if n.name:
                d["name"] = n.name
            if n.children:
                d["children"] = [int(c) for c in n.children]
            t, r, s = n.translation, n.rotation, n.scale
            if n.matrix is not None:
                m = np.asarray(n.matrix, dtype=np.float64)
                if i in animated:
                    t, r, s = decompose_matrix(m)
                    self.warn(f"nodes[{i}]", "animated node matrix decomposed to TRS")
                elif not np.allclose(m, np.eye(4), atol=0, rtol=0):
                    mm = m.copy()
                    mm[3] = (0.0, 0.0, 0.0, 1.0)
                    d["matrix"] = _floats(mat4_to_gltf(mm))
            if t is not None and np.any(np.asarray(t, dtype=np.float64) != 0):
                d["translation"] = _finite(_floats(t), 0.0)
            if r is not None:
                q = _floats(quat_normalize(np.nan_to_num(np.asarray(r, dtype=np.float64))))
                if q != [0.0, 0.0, 0.0, 1.0]:
                    d["rotation"] = q
            if s is not None and np.any(np.asarray(s, dtype=np.float64) != 1):
                d["scale"] = _finite(_floats(s), 1.0)
            if n.mesh is not None:
                if not 0 <= n.mesh < len(mesh_remap):
                    raise EncodeError(f"mesh {n.mesh} does not exist", path=f"nodes[{i}]")
                if mesh_remap[n.mesh] is not None:
                    d["mesh"] = mesh_remap[n.mesh]
                    if n.skin is not None:
                        if not 0 <= n.skin < len(self.scene.skins):
                            raise EncodeError(f"skin {n.skin} does not exist", path=f"nodes[{i}]")
                        d["skin"] = int(n.skin)
            if n.camera is not None:
                if not 0 <= n.camera < len(self.scene.cameras):
                    raise EncodeError(f"camera {n.camera} does not exist", path=f"nodes[{i}]")
                d["camera"] = int(n.camera)
            if n.light is not None:
                if not 0 <= n.light < len(self.scene.lights):
                    raise EncodeError(f"light {n.light} does not exist", path=f"nodes[{i}]")
                d["extensions"] = {"KHR_lights_punctual": {"light": int(n.light)}}
                self.extensions.add("KHR_lights_punctual")
            if n.extras:
                d["extras"] = _jsonable(n.extras)
            out.append(d)
        return out

    def cameras(self) -> list:
        """glTF perspective cameras (a non-finite or non-positive value is
        replaced by a default, with a warning)."""
        out = []
        for ci, c in enumerate(self.scene.cameras):
            where = f"cameras[{ci}]"
            yfov = float(c.yfov)
            if not (math.isfinite(yfov) and 0 < yfov < math.pi):
                self.warn(where, f"field of view {yfov} replaced by 60 degrees")
                yfov = math.radians(60.0)
            znear = float(c.znear)
            if not (math.isfinite(znear) and znear > 0):
                self.warn(where, f"near plane {znear} replaced by 0.1")
                znear = 0.1
            persp: dict = {"yfov": yfov, "znear": znear}
            if c.zfar is not None and math.isfinite(float(c.zfar)) and float(c.zfar) > znear:
                persp["zfar"] = float(c.zfar)
            if c.aspect is not None and math.isfinite(float(c.aspect)) and float(c.aspect) > 0:
                persp["aspectRatio"] = float(c.aspect)
            d: dict = {"type": "perspective", "perspective": persp}
            if c.name:
                d["name"] = c.name
            if c.extras:
                d["extras"] = _jsonable(c.extras)
            out.append(d)
        return out

    def lights(self) -> list:
        """KHR_lights_punctual lights."""
        out = []
        for li, lt in enumerate(self.scene.lights):
            if lt.type not in ("point", "spot", "directional"):
                raise EncodeError(f"light type {lt.type!r}", path=f"lights[{li}]")
            color = [min(max(float(x), 0.0), 1e30) if math.isfinite(float(x)) else 1.0
                     for x in lt.color]
            d: dict = {"type": lt.type, "color": color}
            if math.isfinite(float(lt.intensity)) and float(lt.intensity) >= 0:
                d["intensity"] = float(lt.intensity)
            if lt.range is not None and lt.type != "directional" and \
                    math.isfinite(float(lt.range)) and float(lt.range) > 0:
                d["range"] = float(lt.range)
            if lt.type == "spot":
                outer = float(lt.outer_cone)
                outer = min(max(outer if math.isfinite(outer) else math.pi / 4, 1e-4), math.pi / 2)
                inner = float(lt.inner_cone)
                inner = min(max(inner if math.isfinite(inner) else 0.0, 0.0), outer * 0.999)
                d["spot"] = {"innerConeAngle": inner, "outerConeAngle": outer}
            if lt.name:
                d["name"] = lt.name
            if lt.extras:
                d["extras"] = _jsonable(lt.extras)
            out.append(d)
        return out

    def skins(self) -> list:
        out = []
        for si, sk in enumerate(self.scene.skins):
            where = f"skins[{si}]"
            if not sk.joints:
                raise EncodeError("skin without joints", path=where)
            d: dict = {"joints": [int(j) for j in sk.joints]}
            if any(not 0 <= j < len(self.scene.nodes) for j in d["joints"]):
                raise EncodeError("joint is not a node", path=where)
            if sk.inverse_bind_matrices is not None:
                ibm = np.array(sk.inverse_bind_matrices, dtype=np.float64).reshape(-1, 4, 4)
                if len(ibm) != len(sk.joints):
                    raise EncodeError(f"{len(ibm)} inverse bind matrices for {len(sk.joints)} "
                                      "joints", path=where)
                ibm[:, 3, :] = (0.0, 0.0, 0.0, 1.0)
                d["inverseBindMatrices"] = self.accessor(
                    mat4_to_gltf(ibm).astype(np.float32), 16, where=where + ".inverseBindMatrices")
            if sk.skeleton is not None:
                d["skeleton"] = int(sk.skeleton)
            if sk.name:
                d["name"] = sk.name
            if sk.extras:
                d["extras"] = _jsonable(sk.extras)
            out.append(d)
        return out

    def animations(self, mesh_targets: dict) -> list:
        """The glTF animations; a clip whose keys start before 0 is shifted to
        start at 0 as a whole (its channels keep their relative timing), with
        a warning giving the shift."""
        out = []
        sizes = {"translation": 3, "rotation": 4, "scale": 3}
        for ai, anim in enumerate(self.scene.animations):
            samplers, channels = [], []
            targets: dict = {}
            shift = _negative_start(anim)
            if shift:       # (glTF times start at 0; Maya clips may start before it)
                self.warn(f"animations[{ai}]", f"key times start at {-shift:g} s; the clip is "
                          f"shifted by {shift:g} s to start at 0")
            for ci, ch in enumerate(anim.channels):
                where = f"animations[{ai}].channels[{ci}]"
                if ch.path not in ("translation", "rotation", "scale", "weights"):
                    raise EncodeError(f"unknown path {ch.path!r}", path=where)
                if not 0 <= ch.node < len(self.scene.nodes):
                    raise EncodeError(f"node {ch.node} does not exist", path=where)
                if ch.interpolation not in ("LINEAR", "STEP", "CUBICSPLINE"):
                    raise EncodeError(f"interpolation {ch.interpolation!r}", path=where)
                if ch.path == "weights":
                    ncomp = mesh_targets.get(ch.node, 0)
                    if not ncomp:
                        self.warn(where, "weights channel on a node without morph targets dropped")
                        continue
                else:
                    ncomp = sizes[ch.path]
                times = np.asarray(ch.times, dtype=np.float64).reshape(-1) + shift
                per_key = 3 if ch.interpolation == "CUBICSPLINE" else 1
                vals = np.asarray(ch.values, dtype=np.float64).reshape(len(times) * per_key, ncomp) \
                    if np.asarray(ch.values).size == len(times) * per_key * ncomp else None
                if vals is None:
                    raise EncodeError(f"{np.asarray(ch.values).size} values for {len(times)} keys "
                                      f"of {ncomp} components", path=where)
                if len(times) == 0:
                    continue
                good = np.isfinite(times)
                t32 = times.astype(np.float32)
                order = np.argsort(t32, kind="stable")
                if per_key == 1:
                    keep = np.ones(len(order), bool)
                    keep[:-1] = t32[order][1:] > t32[order][:-1]   # keep the last of equal times
                    keep &= good[order]
                    sel = order[keep]
                    if len(sel) != len(times):
                        self.warn(where, "repeated or unordered key times dropped",
                                  len(times) - len(sel))
                    t32, vals = t32[sel], vals[sel]
                elif np.any(np.diff(t32) <= 0) or not good.all():
                    raise EncodeError("CUBICSPLINE times must be strictly increasing", path=where)
                if t32[0] < 0:
                    raise EncodeError("negative key time", path=where)
                if ch.path == "rotation":
                    vals = np.where(np.isfinite(vals), vals, 0.0)
                    if per_key == 1:
                        vals = quat_normalize(vals)
                key = (int(ch.node), ch.path)
                if key in targets:
                    self.warn(where, "second channel for the same node and path replaces "
                              "the first")
                    channels = [c for c in channels
                                if (c["target"]["node"], c["target"]["path"]) != key]
                tkey = t32.tobytes()          # channels with the same key times share an input
                inp = self._time_inputs.get(tkey)
                if inp is None:
                    inp = self.accessor(t32, 1, minmax=True, where=where + ".input")
                    self._time_inputs[tkey] = inp
                outp = self.accessor(vals.astype(np.float32).reshape(-1, 1 if ch.path == "weights"
                                                                     else ncomp),
                                     1 if ch.path == "weights" else ncomp, where=where + ".output")
                samplers.append({"input": inp, "output": outp, "interpolation": ch.interpolation})
                targets[key] = True
                channels.append({"sampler": len(samplers) - 1,
                                 "target": {"node": key[0], "path": ch.path}})
            if not channels:
                if anim.channels:
                    self.warn(f"animations[{ai}] ({anim.name!r})",
                              "animation without usable channel dropped")
                continue
            used = sorted({c["sampler"] for c in channels})
            if len(used) != len(samplers):   # drop samplers of replaced channels
                re = {old: new for new, old in enumerate(used)}
                samplers = [samplers[o] for o in used]
                for c in channels:
                    c["sampler"] = re[c["sampler"]]
            d: dict = {"channels": channels, "samplers": samplers}
            if anim.name:
                d["name"] = anim.name
            if anim.extras:
                d["extras"] = _jsonable(anim.extras)
            out.append(d)
        return out

    def build(self) -> dict:
        from .._version import __version__
        sc = self.scene
        self.check_tree()
        gl: dict = {"asset": {"version": "2.0", "generator": f"potsherd {__version__}"}}
        images = self.images()
        materials, textures, samplers = self.materials()
        meshes, mesh_remap = self.meshes()
        animated = {c.node for a in sc.animations for c in a.channels if c.path != "weights"}
        nodes = self.nodes(mesh_remap, animated)
        skins = self.skins()
        mesh_targets = {}
        for i, n in enumerate(sc.nodes):
            if n.mesh is not None and mesh_remap[n.mesh] is not None:
                m = meshes[mesh_remap[n.mesh]]
                if "targets" in m["primitives"][0]:
                    mesh_targets[i] = len(m["primitives"][0]["targets"])
        animations = self.animations(mesh_targets)
        scene: dict = {"nodes": [int(r) for r in sc.roots]}
        if sc.name:
            scene["name"] = sc.name
        if sc.extras:
            scene["extras"] = _jsonable(sc.extras)
        gl["scene"] = 0
        gl["scenes"] = [scene]
        cameras = self.cameras()
        for key, val in (("nodes", nodes), ("meshes", meshes), ("materials", materials),
                         ("textures", textures), ("samplers", samplers), ("images", images),
                         ("skins", skins), ("animations", animations), ("cameras", cameras)):
            if val:
                gl[key] = val
        if self.scene.lights:
            gl.setdefault("extensions", {})["KHR_lights_punctual"] = {"lights": self.lights()}
            self.extensions.add("KHR_lights_punctual")
        if self.accessors:
            gl["accessors"] = self.accessors
        if self.views:
            gl["bufferViews"] = self.views
        pad = (-len(self.bin)) % 4
        self.bin += b"\0" * pad
        if self.bin:
            gl["buffers"] = [{"byteLength": len(self.bin)}]
        if self.extensions:
            gl["extensionsUsed"] = sorted(self.extensions)
        self.flush_warnings()
        if self.warnings:
            gl["asset"]["extras"] = {"warnings": list(self.warnings)}
        unique_names(gl)
        return gl if _text_is_valid(gl) else valid_text(gl)



def _negative_start(anim: Any) -> float:
    """How far ``anim``'s earliest finite key lies before 0 (0.0 when none does)."""
    first = [float(np.min(t[np.isfinite(t)])) for t in (np.asarray(c.times, np.float64).reshape(-1)
                                                       for c in anim.channels)
             if np.isfinite(t).any()]
    start = min(first, default=0.0)
    return -start if start < 0 else 0.0


def _faces_apart(p: Any) -> Any:
    """``faces_apart`` for a well-formed primitive; any other is left for the
    checks of ``meshes`` to report."""
    pos = np.asarray(p.positions)
    if p.indices is None or pos.ndim != 2 or not len(pos):
        return p
    n = len(pos)
    ix = np.asarray(p.indices)
    arrays = [p.normals, p.colors, p.joints, p.weights, *p.uvs]
    arrays += [a for t in p.targets for a in (t.positions, t.normals)]
    if (ix.dtype.kind not in "iu" or not ix.size or ix.min() < 0 or ix.max() >= n
            or any(a is not None and len(a) != n for a in arrays)):
        return p
    return faces_apart(p)


def _text_is_valid(gl: dict) -> bool:
    """Whether every string of ``gl`` (keys too) is valid UTF-8 already, in
    which case :func:`valid_text` would return an equal copy: one pass of the
    C JSON encoder instead of a Python walk over every dict and list."""
    try:
        json.dumps(gl, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError):  # not plain JSON: the walk decides
        return False
    return True


def scene_to_gltf(scene: Scene, binary: bool = True, *, image_files: dict | None = None,
                  bin_uri: str | None = None) -> tuple:
    """Encode a scene: returns ``(gltf_json_dict, bin_bytes)``.

    Images are embedded in the binary buffer unless ``image_files`` (a dict)
    is given: then each image gets a relative ``uri`` and its bytes are put
    in ``image_files[uri]``.  ``bin_uri`` names the external buffer file
    (``.gltf`` output); for ``.glb`` leave it None.
    """
    w = _Writer(scene, binary, image_files)
    with np.errstate(over="ignore"):      # float32 overflow: the accessors report it by name
        gl = w.build()
    if "buffers" in gl and bin_uri is not None:
        gl["buffers"][0]["uri"] = bin_uri
    return gl, bytes(w.bin)


def glb_bytes(gltf_json: dict, bin_data: bytes) -> bytes:
    """Pack JSON and the binary buffer into a GLB container."""
    js = json.dumps(gltf_json, separators=(",", ":"), ensure_ascii=False,
                    allow_nan=False).encode("utf-8")
    js += b" " * ((-len(js)) % 4)
    chunks = struct.pack("<II", len(js), CHUNK_JSON) + js
    if bin_data:
        b = bin_data + b"\0" * ((-len(bin_data)) % 4)
        chunks += struct.pack("<II", len(b), CHUNK_BIN) + b
    return struct.pack("<III", GLB_MAGIC, 2, 12 + len(chunks)) + chunks


def write_glb(scene: Scene, path: str | os.PathLike) -> int:
    """Write ``scene`` as one .glb (atomically); returns its size."""
    gl, b = scene_to_gltf(scene, True)
    data = glb_bytes(gl, b)
    atomic_write(path, data)
    return len(data)


def write_gltf(scene: Scene, path: str | os.PathLike, *, external_images: bool = True) -> int:
    """Write ``NAME.gltf`` + ``NAME.bin`` (+ image files) beside each other; returns bytes written."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    files: dict = {} if external_images else None  # type: ignore[assignment]
    uri_stem = _uri_stem(stem)
    gl, b = scene_to_gltf(scene, False, image_files=files, bin_uri=uri_stem + ".bin")
    if files:
        renamed = {}
        for img in gl.get("images", []):
            if "uri" in img and img["uri"] in files:
                renamed[f"{stem}_{img['uri']}"] = files[img["uri"]]
                img["uri"] = f"{uri_stem}_{img['uri']}"
        files = renamed
    text = json.dumps(gl, indent=1, ensure_ascii=False, allow_nan=False).encode("utf-8")
    total = len(text)
    # every file staged first, then renamed as one set, the .gltf last: an
    # interruption never leaves the old .gltf beside a new .bin
    items = []
    if b:
        items.append((os.path.join(folder, stem + ".bin"), b))
        total += len(b)
    for name, data in (files or {}).items():
        items.append((os.path.join(folder, name), data))
        total += len(data)
    items.append((path, text))
    atomic_write_all(items)
    return total


def write_scene(scene: Scene, path: str | os.PathLike, binary: bool | None = None) -> int:
    """.glb or .gltf by ``binary`` (default: from the extension)."""
    if binary is None:
        binary = not os.fspath(path).lower().endswith(".gltf")
    return write_glb(scene, path) if binary else write_gltf(scene, path)


def document_scene(doc: Any, options: dict | None = None) -> Scene:
    """``doc.codec.to_scene(doc, **options)`` with a clear error when absent."""
    codec = doc.codec
    to_scene = codec.to_scene
    if to_scene is None:
        raise NoSceneError(f"{codec.name} files cannot be exported to glTF (no to_scene "
                           f"in the {codec.family} family yet)")
    opts = {k: v for k, v in (options or {}).items() if v is not None}
    opts.setdefault("source_path", doc.source)
    try:
        scene = to_scene(doc, **opts)
    except FormatError:
        raise
    except ModuleNotFoundError as e:
        if (e.name or "").startswith("potsherd.formats."):   # a family without a converter module
            raise NoSceneError(f"{codec.name} files cannot be exported to glTF yet "
                               f"({e.name} is missing)") from None
        raise SceneExportError(f"{codec.name} to_scene: {e}") from e
    except NotImplementedError as e:
        raise NoSceneError(f"{codec.name} files cannot be exported to glTF: {e}") from None
    except (RecursionError, MemoryError) as e:
        raise FormatError(f"{codec.name}: scene too large or deep to export ({type(e).__name__})")
    except Exception as e:  # noqa: BLE001 - a converter bug must not kill a batch
        raise SceneExportError(f"internal error in {codec.name} to_scene: "
                               f"{type(e).__name__}: {e}") from e
    if not isinstance(scene, Scene):
        raise SceneExportError(f"{codec.name} to_scene returned {type(scene).__name__}, "
                               "not a Scene")
    return scene


def export_document(doc: Any, out_path: str | os.PathLike, *, binary: bool = True,
                    options: dict | None = None) -> dict:
    """Convert a decoded document to glTF at ``out_path``; returns a summary
    (``path``, ``bytes``, counts, ``warnings``)."""
    return write_exported(document_scene(doc, options), out_path, binary=binary)


def write_exported(scene: Scene, out_path: str | os.PathLike, *, binary: bool = True) -> dict:
    """Write an exported scene; returns the summary of :func:`export_document`.
    File-system errors stay ``OSError`` (naming the path); anything else
    unexpected is a :class:`SceneExportError`."""
    try:
        size = write_glb(scene, out_path) if binary else write_gltf(scene, out_path)
    except (FormatError, OSError):
        raise
    except Exception as e:  # noqa: BLE001
        raise SceneExportError(f"internal error writing glTF: {type(e).__name__}: {e}") from e
    return {"path": os.fspath(out_path), "bytes": size, "nodes": len(scene.nodes),
            "meshes": len(scene.meshes), "animations": len(scene.animations),
            "warnings": list(scene.warnings)}


def _texcoords_needed(m: Any) -> int:
    """How many TEXCOORD sets the textures of material ``m`` read (0: none)."""
    refs = [getattr(m, a, None) for a in ("base_color_texture", "normal_texture",
                                          "occlusion_texture", "emissive_texture",
                                          "metallic_roughness_texture")]
    return max((r.texcoord + 1 for r in refs if r is not None), default=0)
