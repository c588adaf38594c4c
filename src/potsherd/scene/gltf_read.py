"""glTF 2.0 reader: ``.glb`` / ``.gltf`` into the neutral :class:`~potsherd.scene.Scene`.

The inverse of :mod:`potsherd.export.gltf`: what that writer encodes comes
back as the same scene (arrays as float32 / the integer types glTF stores),
and what Blender, assimp and other exporters write reads into the same
model.  Conventions are glTF's and stay so (+Y up, metres, CCW, UV origin
top-left); importers convert to their target.

A glTF file is hostile input like any other: every index is checked against
its list, every accessor against its buffer view and every view against its
buffer *before* an array is made; counts are bounded by :class:`Limits`,
zero-filled data (accessors without a view) by a budget that follows the
input size, and the bytes all accessors copy out of the buffers by the
document budget (:meth:`Limits.document_budget`).  Errors are :class:`JsonFormatError` / :class:`FormatError`
carrying the JSON path (``$.accessors[3].count``).

The UV set a base colour texture reads comes first in its material's primitives
(importers keep ``uvs[0]`` only).  ``EXT_mesh_gpu_instancing`` instances become child nodes of the instanced node
(one per instance, with its translation, rotation and scale), so importers
see every copy.

Textures whose image is only in ``EXT_texture_webp`` / ``KHR_texture_basisu``
use that image (WebP decodes with Pillow; KTX2 is kept as data, with a warning).

Read, not kept (each named in a warning): cameras, lights, unknown
extensions (their names also end up in ``scene.extras["extensionsUsed"]``),
animation channels without a target node.
Draco primitives (``KHR_draco_mesh_compression``) are decoded with the
``DracoPy`` binding of Google's Draco library (:mod:`.gltf_draco`).  Refused:
``extensionsRequired`` naming a compression this reader cannot decode (meshopt;
Draco without DracoPy installed), and such a primitive without an uncompressed
copy (files that name the extension only in ``extensionsUsed``).
"""
from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

from ..core.errors import CountError, FormatError, InternalDecodeError, LimitError
from ..core.limits import DEFAULT_LIMITS, Limits
from .model import (Animation, Channel, Image, Material, Mesh, MorphTarget, Node, Primitive,
                    Scene, Skin, TextureRef)
from .gltf_access import GLB_MAGIC, GltfAccess, _kind, _to_float
from . import gltf_draco
from .gltf_instancing import Instancing, check_drawn
from ..resolve import decodes_as_image
from .gltf_uvsets import UvSets
from .geometry import strip_or_fan_triangles
from .xform import mat4_from_gltf

__all__ = ["read_gltf", "GLB_MAGIC", "texture_transform", "GltfInstances"]


_PATH_SIZES = {"translation": 3, "rotation": 4, "scale": 3}
#: extensions whose data this reader cannot decode: a file requiring them is refused
_UNDECODABLE = {"KHR_draco_mesh_compression", "EXT_meshopt_compression",
                "KHR_meshopt_compression"}
_UNDERSTOOD = {"KHR_materials_unlit", "KHR_mesh_quantization", "KHR_texture_transform",
               "EXT_mesh_gpu_instancing"}
#: texture extensions naming their image in ``source``: whether Pillow decodes it
_IMAGE_EXTENSIONS = {"EXT_texture_webp": True, "KHR_texture_basisu": False,
                     "EXT_texture_avif": False}


def read_gltf(source: Any, *, limits: Limits = DEFAULT_LIMITS,
              base_dir: str | os.PathLike | None = None) -> Scene:
    """Read a ``.glb`` or ``.gltf`` (path or bytes) into a :class:`Scene`.

    ``base_dir`` is where relative buffer and image URIs are looked up
    (default: the folder of ``source`` when it is a path; for bytes, external
    URIs are then refused).  Only :class:`FormatError` escapes.
    """
    try:
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
            folder = os.fspath(base_dir) if base_dir is not None else None
        else:
            path = os.fspath(source)
            try:
                size = os.path.getsize(path)
                if size > limits.max_input:
                    raise LimitError(f"file of {size} bytes is over the input limit",
                                     expected=f"<= {limits.max_input}", found=size)
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise FormatError(f"cannot read {path}: {e.strerror or e}") from None
            folder = os.fspath(base_dir) if base_dir is not None else \
                os.path.dirname(os.path.abspath(path))
        if len(data) > limits.max_input:
            raise LimitError(f"input of {len(data)} bytes is over the input limit",
                             expected=f"<= {limits.max_input}", found=len(data))
        return _Reader(data, folder, limits).read()
    except FormatError:
        raise
    except RecursionError:
        raise LimitError("glTF structure nested too deeply") from None
    except MemoryError:
        raise LimitError("glTF data too large to read") from None
    except Exception as e:  # noqa: BLE001 - a reader bug must not be a traceback
        raise InternalDecodeError(f"internal error reading glTF: {type(e).__name__}: {e}") from e


def texture_transform(tt: Any, texcoord: int = 0,
                      where: str = "KHR_texture_transform") -> tuple:
    """``(2x3 matrix or None, UV set, warnings)`` of a ``KHR_texture_transform``
    object: the matrix the reader bakes into a base colour texture's UVs
    (``uv' = M[:, :2] @ uv + M[:, 2]``), for other readers of glTF (the
    checking renderer) to apply the very same transform.  Malformed: None and
    the reader's warning."""
    r = _Reader(b"", None, DEFAULT_LIMITS)
    matrix, k = r.uv_transform(tt, where, texcoord)
    return matrix, k, r.warnings


class GltfInstances:
    """The ``EXT_mesh_gpu_instancing`` instances of a glTF's nodes, read with the
    reader's checks (for the renderer, which parses glTF itself): ``trs(i)`` is
    node ``i``'s ``(translation, rotation, scale)`` arrays or None.  Only
    :class:`FormatError` escapes."""

    def __init__(self, data: bytes, folder: str | None, limits: Limits = DEFAULT_LIMITS) -> None:
        self._r = _Reader(data, folder, limits)
        self._ready = False

    def trs(self, node: int) -> Optional[tuple]:
        try:
            if not self._ready:
                self._r.parse_container()
                self._r.read_buffers()
                self._ready = True
            return self._r.instance_trs(node)
        except FormatError:
            raise
        except Exception as e:  # noqa: BLE001 - a reader bug must not be a traceback
            raise InternalDecodeError(f"internal error reading glTF instances: "
                                      f"{type(e).__name__}: {e}") from e


# ---- the scene, built on the checked access of gltf_access.py --------------------


class _Reader(UvSets, Instancing, GltfAccess):
    """The scene built from the checked document (images, materials, meshes, nodes,
    skins, animations)."""

    def __init__(self, data: bytes, folder: Optional[str], limits: Limits) -> None:
        super().__init__(data, folder, limits)
        #: image extension -> images a texture took from it (no plain ``source``)
        self.image_extensions_used: dict = {}
        #: accessors already checked as key times (finite, increasing)
        self.checked_times: set = set()
        #: the compressions this reader cannot decode here (Draco: with DracoPy it can)
        self.undecodable = _UNDECODABLE - ({gltf_draco.EXTENSION} if gltf_draco.available()
                                           else set())


    # objects ----------------------------------------------------------------------
    def read(self) -> Scene:
        self.parse_container()
        gl = self.gl
        asset = self.get(gl, "asset", "$", "object", required=True)
        version = self.get(asset, "version", "$.asset", "string", required=True)
        if not version.startswith("2."):
            raise self.fail("$.asset.version", "not a glTF 2.x file", expected="2.x",
                            found=version)
        used = [x for x in (self.get(gl, "extensionsUsed", "$", "array", []) or [])
                if isinstance(x, str)]
        required = [x for x in (self.get(gl, "extensionsRequired", "$", "array", []) or [])
                    if isinstance(x, str)]
        for i, ext in enumerate(required):
            if ext in self.undecodable:
                raise self.fail(f"$.extensionsRequired[{i}]", f"{ext} is not supported "
                                "(decompress the file first, e.g. with gltf-transform)",
                                found=ext, cls=FormatError)
        self.read_buffers()
        scene = Scene()
        scene.images = [self.image(i, d) for i, d in enumerate(self.items("images"))]
        textures = self.items("textures")
        samplers = self.items("samplers")
        scene.materials = [self.material(i, d, textures, samplers)
                           for i, d in enumerate(self.items("materials"))]
        self.image_extension_warnings(scene, required)
        scene.meshes = [self.mesh(i, d) for i, d in enumerate(self.items("meshes"))]
        self.apply_uv_transforms(scene)
        self.base_colour_uv_first(scene)
        scene.nodes = [self.node(i, d) for i, d in enumerate(self.items("nodes"))]
        self.check_tree(scene)
        scene.skins = [self.skin(i, d) for i, d in enumerate(self.items("skins"))]
        for i, n in enumerate(scene.nodes):
            if n.skin is not None and n.mesh is None:
                n.skin = None
        self.check_joint_indices(scene)
        scene.animations = [a for a in (self.animation(i, d, scene) for i, d in
                                        enumerate(self.items("animations"))) if a is not None]
        scene.animations = self.merge_per_node_animations(scene.animations)
        self.expand_instances(scene)
        self.pick_scene(scene)
        check_drawn(scene, self.limits, len(self.data))
        unknown = sorted(set(used) - _UNDERSTOOD - set(_IMAGE_EXTENSIONS))
        if unknown:
            scene.extras.setdefault("extensionsUsed", unknown)
        ignored = [x for x in unknown if x not in _UNDECODABLE]   # (those: decoded or refused)
        if ignored:
            self.warnings.append(f"glTF extension(s) not read, what they add is not kept: "
                                 f"{', '.join(ignored)}")
        cameras = sum(1 for d in self.items("nodes") if isinstance(d, dict) and "camera" in d)
        if cameras:
            self.warnings.append(f"{cameras} camera node(s) not read (a camera is kept only as "
                                 "its node's transform)")
        scene.warnings.extend(self.warnings)
        return scene

    def pick_scene(self, scene: Scene) -> None:
        scenes = self.items("scenes")
        parents = scene.parents()
        if scenes:
            si = self.index(self.gl, "scene", "$", "scenes")
            si = 0 if si is None else si
            s = scenes[si]
            spath = f"$.scenes[{si}]"
            roots = self.get(s, "nodes", spath, "array", [])
            for k, r in enumerate(roots):
                if not (isinstance(r, int) and not isinstance(r, bool)
                        and 0 <= r < len(scene.nodes)):
                    raise self.fail(f"{spath}.nodes[{k}]", "root is not a node", found=r)
                if parents[r] is not None:
                    raise self.fail(f"{spath}.nodes[{k}]", "root node has a parent", found=r)
            if len(set(roots)) != len(roots):
                raise self.fail(f"{spath}.nodes", "a root is listed twice")
            scene.roots = list(roots)
            scene.name = self.get(s, "name", spath, "string", "")
            scene.extras = self.extras(s)
            if len(scenes) > 1:
                self.warnings.append(f"{len(scenes)} scenes in the file; scene {si} read")
            self.detach_unshown(scene, si)
        else:
            scene.roots = [i for i, p in enumerate(parents) if p is None]

    def detach_unshown(self, scene: Scene, si: int) -> None:
        """Meshes on nodes the chosen scene does not reach (another scene's, or
        no scene's) are not what the file shows, so importers must not bake them
        in.  Their nodes stay, so indices and skins' joints are unchanged.
        check_tree ran first: the tree has no cycles."""
        shown = [False] * len(scene.nodes)
        stack = list(scene.roots)
        while stack:
            i = stack.pop()
            if not shown[i]:
                shown[i] = True
                stack.extend(scene.nodes[i].children)
        dropped = [i for i, n in enumerate(scene.nodes) if not shown[i] and n.mesh is not None]
        for i in dropped:
            scene.nodes[i].mesh = None
            scene.nodes[i].skin = None
        if dropped:
            self.warnings.append(f"{len(dropped)} mesh node(s) outside scene {si} not read "
                                 f"(first: $.nodes[{dropped[0]}])")

    def image(self, i: int, d: dict) -> Image:
        path = f"$.images[{i}]"
        name = self.get(d, "name", path, "string", "")
        mime = self.get(d, "mimeType", path, "string")
        uri = self.get(d, "uri", path, "string")
        vi = self.index(d, "bufferView", path, "bufferViews")
        data = None
        keep_uri = None
        if vi is not None:
            view, _ = self.view_bytes(vi, path)
            data = bytes(view)
        elif uri is not None:
            if uri.startswith("data:"):
                head = uri[5:].split(",", 1)[0]
                mime = mime or head.split(";", 1)[0] or None
                data = self.load_uri(uri, path + ".uri")
            else:
                keep_uri = uri
                try:
                    data = self.load_uri(uri, path + ".uri")
                except FormatError as e:   # refused, missing or over the limits: a warning
                    self.warnings.append(f"images[{i}]: {e.message}; kept as a reference")
            if data is not None and not decodes_as_image(data):
                # a referenced file is embedded only when it is an image
                self.warnings.append(f"images[{i}]: {_short_uri(uri)!r} does not decode as an "
                                     "image; kept as a reference, not embedded")
                data = None
                keep_uri = keep_uri or (None if uri.startswith("data:") else uri)
        else:
            raise self.fail(path, "image has neither uri nor bufferView")
        if data is not None:
            sniffed = _sniff_image(data)
            mime = mime or sniffed
        return Image(name=name, data=data, mime_type=mime or "image/png", uri=keep_uri,
                     extras=self.extras(d))

    def texture_ref(self, info: dict, path: str, textures: list, samplers: list
                    ) -> Optional[TextureRef]:
        ti = self.index(info, "index", path, "textures", required=True)
        t = textures[ti]
        tpath = f"$.textures[{ti}]"
        src = self.index(t, "source", tpath, "images")
        if src is None:
            ext = t.get("extensions") if isinstance(t.get("extensions"), dict) else {}
            # KHR_texture_basisu, EXT_texture_webp, ...: a decodable one first
            for name in sorted(ext, key=lambda k: (not _IMAGE_EXTENSIONS.get(k, False), k)):
                e = ext[name]
                if isinstance(e, dict) and "source" in e:
                    src = self.index(e, "source", f"{tpath}.extensions.{name}", "images")
                    self.image_extensions_used.setdefault(name, set()).add(src)
                    break
        if src is None:
            self.warnings.append(f"{tpath}: texture without an image ignored")
            return None
        texcoord = self.get(info, "texCoord", path, "integer", 0)
        if texcoord < 0:                    # (a UV set's number: TEXCOORD_n)
            raise self.fail(path + ".texCoord", "texCoord must be 0 or more", found=texcoord)
        ref = TextureRef(image=src, texcoord=texcoord, extras=self.extras(info))
        si = self.index(t, "sampler", tpath, "samplers")
        if si is not None:
            s = samplers[si]
            spath = f"$.samplers[{si}]"
            ref.wrap_s = self.get(s, "wrapS", spath, "integer", ref.wrap_s)
            ref.wrap_t = self.get(s, "wrapT", spath, "integer", ref.wrap_t)
            ref.mag_filter = self.get(s, "magFilter", spath, "integer")
            ref.min_filter = self.get(s, "minFilter", spath, "integer")
        ext = info.get("extensions")
        if isinstance(ext, dict) and "KHR_texture_transform" in ext:
            ref.extras["KHR_texture_transform"] = ext["KHR_texture_transform"]
            ref.extras["_transform_path"] = f"{path}.extensions.KHR_texture_transform"
        return ref

    def image_extension_warnings(self, scene: Scene, required: list) -> None:
        """What became of each required extension this reader does not fully
        handle, said truly: an image extension whose images Pillow decodes
        (EXT_texture_webp) needs no word; one it cannot (KHR_texture_basisu's
        KTX2) is used, kept as data importers cannot decode; the rest ignored."""
        for ext in dict.fromkeys(required):
            if ext in _UNDERSTOOD or ext in _UNDECODABLE:
                continue
            images = self.image_extensions_used.get(ext)
            if images is None:
                self.warnings.append(f"required extension {ext} ignored")
            elif not _IMAGE_EXTENSIONS.get(ext, False):
                mimes = sorted({scene.images[i].mime_type for i in images})
                self.warnings.append(f"required extension {ext}: its {len(images)} image(s) "
                                     f"used as textures, kept as {', '.join(mimes)} data that "
                                     "cannot be decoded here (importers report them "
                                     "untextured)")

    def material(self, i: int, d: dict, textures: list, samplers: list) -> Material:
        path = f"$.materials[{i}]"
        m = Material(name=self.get(d, "name", path, "string", ""), extras=self.extras(d))
        m.metallic = 1.0           # glTF's defaults, when the file omits the factors
        pbr = self.get(d, "pbrMetallicRoughness", path, "object", {})
        ppath = path + ".pbrMetallicRoughness"
        m.base_color = tuple(self.numbers(pbr, "baseColorFactor", ppath, 4, [1.0] * 4))
        m.metallic = float(self.get(pbr, "metallicFactor", ppath, "number", 1.0))
        m.roughness = float(self.get(pbr, "roughnessFactor", ppath, "number", 1.0))
        for key, attr in (("baseColorTexture", "base_color_texture"),
                          ("metallicRoughnessTexture", "metallic_roughness_texture")):
            info = self.get(pbr, key, ppath, "object")
            if info is not None:
                setattr(m, attr, self.texture_ref(info, f"{ppath}.{key}", textures, samplers))
        for key, attr in (("normalTexture", "normal_texture"),
                          ("occlusionTexture", "occlusion_texture"),
                          ("emissiveTexture", "emissive_texture")):
            info = self.get(d, key, path, "object")
            if info is not None:
                ref = self.texture_ref(info, f"{path}.{key}", textures, samplers)
                if ref is not None and key == "normalTexture":
                    ref.extras.setdefault("scale", self.get(info, "scale", f"{path}.{key}",
                                                            "number", 1.0))
                if ref is not None and key == "occlusionTexture":
                    ref.extras.setdefault("strength", self.get(info, "strength", f"{path}.{key}",
                                                               "number", 1.0))
                setattr(m, attr, ref)
        m.emissive = tuple(self.numbers(d, "emissiveFactor", path, 3, [0.0] * 3))
        m.alpha_mode = self.get(d, "alphaMode", path, "string", "OPAQUE")
        if m.alpha_mode not in ("OPAQUE", "MASK", "BLEND"):
            raise self.fail(path + ".alphaMode", "unknown alpha mode",
                            expected="OPAQUE, MASK or BLEND", found=m.alpha_mode)
        m.alpha_cutoff = float(self.get(d, "alphaCutoff", path, "number", 0.5))
        m.double_sided = self.get(d, "doubleSided", path, "boolean", False)
        ext = d.get("extensions")
        if isinstance(ext, dict):
            m.unlit = "KHR_materials_unlit" in ext
            sg = ext.get("KHR_materials_pbrSpecularGlossiness")
            if isinstance(sg, dict):
                self.diffuse_as_base(m, sg, pbr, f"{path}.extensions.KHR_materials_pbrSpecularGlossiness",
                                     textures, samplers)
            other = sorted(k for k in ext if k != "KHR_materials_unlit")
            if other:
                m.extras.setdefault("extensions", {k: ext[k] for k in other})
        return m

    def diffuse_as_base(self, m: Material, sg: dict, pbr: dict, path: str, textures: list,
                        samplers: list) -> None:
        """The specular-glossiness diffuse colour and texture as the base colour,
        where ``pbrMetallicRoughness`` gives none. Older exporters (assimp,
        Sketchfab's older files, obj2gltf) write only this extension. A game
        format's texture is the diffuse map."""
        if "baseColorFactor" not in pbr:
            m.base_color = tuple(self.numbers(sg, "diffuseFactor", path, 4, [1.0] * 4))
        info = self.get(sg, "diffuseTexture", path, "object")
        if m.base_color_texture is None and info is not None:
            m.base_color_texture = self.texture_ref(info, f"{path}.diffuseTexture", textures,
                                                    samplers)

    def attribute_sets(self, attrs: dict, prefix: str, path: str) -> list:
        out = []
        k = 0
        while f"{prefix}_{k}" in attrs:
            out.append(self.index(attrs, f"{prefix}_{k}", path, "accessors"))
            k += 1
        return out

    def mesh(self, mi: int, d: dict) -> Mesh:
        path = f"$.meshes[{mi}]"
        prims_json = self.get(d, "primitives", path, "array", required=True)
        if not prims_json:
            raise self.fail(path + ".primitives", "mesh without primitives")
        mesh = Mesh(name=self.get(d, "name", path, "string", ""), extras=self.extras(d))
        names = mesh.extras.pop("targetNames", None)
        if isinstance(names, list):
            mesh.target_names = [str(x) for x in names]
        w = d.get("weights")
        if w is not None:
            mesh.weights = self.numbers(d, "weights", path, len(w) if isinstance(w, list) else -1,
                                        None)
        for pi, p in enumerate(prims_json):
            ppath = f"{path}.primitives[{pi}]"
            if not isinstance(p, dict):
                raise self.fail(ppath, "must be an object", found=_kind(p))
            prim = self.primitive(p, ppath)
            if prim is not None:
                mesh.primitives.append(prim)
        ntargets = {len(p.targets) for p in mesh.primitives}
        if len(ntargets) > 1:
            raise self.fail(path + ".primitives", "primitives have different numbers of "
                            "morph targets", found=sorted(ntargets))
        n = ntargets.pop() if ntargets else 0
        if mesh.weights is not None and len(mesh.weights) != n:
            raise self.fail(path + ".weights", "weights do not match the morph targets",
                            expected=n, found=len(mesh.weights))
        if n and mesh.target_names:
            for prim in mesh.primitives:
                for t, name in zip(prim.targets, mesh.target_names):
                    t.name = name
        return mesh

    def primitive(self, p: dict, path: str) -> Optional[Primitive]:
        attrs = self.get(p, "attributes", path, "object", required=True)
        apath = path + ".attributes"
        if "POSITION" not in attrs:
            raise self.fail(apath + ".POSITION", "primitive without POSITION")
        extensions = set(self.get(p, "extensions", path, "object", {}) or {})
        compressed = sorted(extensions & self.undecodable)
        if not compressed and gltf_draco.EXTENSION in extensions:
            gltf_draco.decode_primitive(self, p, path)      # its values take the accessors'
        if compressed:
            pa = self.items("accessors")[self.index(attrs, "POSITION", apath, "accessors")]
            if "bufferView" not in pa and "sparse" not in pa:   # the fallback would be zeros
                raise self.fail(f"{path}.extensions.{compressed[0]}", f"{compressed[0]} is not "
                                "supported and this primitive has no uncompressed copy "
                                "(decompress the file first, e.g. with gltf-transform)",
                                found=compressed[0], cls=FormatError)
        pos = self.floats(self.index(attrs, "POSITION", apath, "accessors"),
                          apath + ".POSITION", (3,))
        nv = len(pos)

        def rows(arr: np.ndarray, name: str) -> np.ndarray:
            if len(arr) != nv:
                raise CountError(f"{name} has {len(arr)} rows, POSITION has {nv}",
                                 path=f"{apath}.{name}", expected=nv, found=len(arr))
            return arr

        prim = Primitive(positions=pos, extras=self.extras(p))
        if "NORMAL" in attrs:
            prim.normals = rows(self.floats(self.index(attrs, "NORMAL", apath, "accessors"),
                                            apath + ".NORMAL", (3,)), "NORMAL")
        for k, ai in enumerate(self.attribute_sets(attrs, "TEXCOORD", apath)):
            prim.uvs.append(rows(self.floats(ai, f"{apath}.TEXCOORD_{k}", (2,)), f"TEXCOORD_{k}"))
        if "COLOR_0" in attrs:
            ai = self.index(attrs, "COLOR_0", apath, "accessors")
            arr, norm = self.accessor(ai)
            if arr.shape[1] not in (3, 4):
                raise self.fail(apath + ".COLOR_0", "COLOR_0 must be VEC3 or VEC4",
                                found=arr.shape[1])
            if arr.dtype in (np.uint8, np.uint16) and norm and arr.shape[1] == 4:
                prim.colors = rows(arr, "COLOR_0")
            else:
                prim.colors = rows(_to_float(arr, norm), "COLOR_0")
        jsets = self.attribute_sets(attrs, "JOINTS", apath)
        wsets = self.attribute_sets(attrs, "WEIGHTS", apath)
        if jsets or wsets:
            if len(jsets) != len(wsets):
                raise self.fail(apath, "JOINTS_n and WEIGHTS_n sets differ in number",
                                found=f"{len(jsets)} JOINTS, {len(wsets)} WEIGHTS")
            js, ws = [], []
            for k, (ja, wa) in enumerate(zip(jsets, wsets)):
                j, jn = self.accessor(ja)
                if j.shape[1] != 4 or j.dtype not in (np.uint8, np.uint16):
                    raise self.fail(f"{apath}.JOINTS_{k}", "JOINTS must be VEC4 of unsigned "
                                    "byte or short", found=f"{j.shape[1]} x {j.dtype}")
                js.append(rows(j, f"JOINTS_{k}"))
                ws.append(rows(self.floats(wa, f"{apath}.WEIGHTS_{k}", (4,)), f"WEIGHTS_{k}"))
            prim.joints = np.concatenate(js, axis=1) if len(js) > 1 else js[0]
            prim.weights = np.concatenate(ws, axis=1) if len(ws) > 1 else ws[0]
        mode = self.get(p, "mode", path, "integer", 4)
        idx = None
        ii = self.index(p, "indices", path, "accessors")
        if ii is not None:
            arr, _ = self.accessor(ii)
            if arr.shape[1] != 1 or arr.dtype not in (np.uint8, np.uint16, np.uint32):
                raise self.fail(path + ".indices", "indices must be unsigned SCALAR",
                                found=f"{arr.shape[1]} x {arr.dtype}")
            idx = arr[:, 0].astype(np.uint32)
            if idx.max() >= nv:
                raise CountError("index outside the primitive's vertices", path=path + ".indices",
                                 expected=f"< {nv}", found=int(idx.max()))
        if mode in (5, 6):
            prim.indices = strip_or_fan_triangles(idx if idx is not None else
                                         np.arange(nv, dtype=np.uint32), mode)
            prim.extras.setdefault("sourceMode", "TRIANGLE_STRIP" if mode == 5 else
                                   "TRIANGLE_FAN")
        elif mode == 4:
            if idx is not None and len(idx) % 3:
                self.warnings.append(f"{path}: {len(idx) % 3} trailing indices dropped")
                idx = idx[:len(idx) - len(idx) % 3]
            prim.indices = idx
        elif mode in (0, 1, 2, 3):
            seq = idx if idx is not None else np.arange(nv, dtype=np.uint32)
            if mode in (2, 3):
                ends = np.concatenate([seq[1:], seq[:1]]) if mode == 2 else seq[1:]
                prim.indices = np.stack([seq[:len(ends)], ends], axis=1).reshape(-1)
                mode = 1
                self.warnings.append(f"{path}: line strip/loop turned into lines")
            else:
                prim.indices = idx
            prim.mode = mode
        else:
            raise self.fail(path + ".mode", "unknown primitive mode", expected="0..6",
                            found=mode)
        targets = self.get(p, "targets", path, "array", [])
        for ti, t in enumerate(targets):
            tpath = f"{path}.targets[{ti}]"
            if not isinstance(t, dict):
                raise self.fail(tpath, "must be an object", found=_kind(t))
            mt = MorphTarget()
            for key, attr in (("POSITION", "positions"), ("NORMAL", "normals")):
                if key in t:
                    arr = self.floats(self.index(t, key, tpath, "accessors"), f"{tpath}.{key}",
                                      (3,))
                    if len(arr) != nv:
                        raise CountError(f"morph {key} has {len(arr)} rows, POSITION has {nv}",
                                         path=f"{tpath}.{key}", expected=nv, found=len(arr))
                    setattr(mt, attr, arr)
            prim.targets.append(mt)
        if "material" in p:
            prim.material = self.index(p, "material", path, "materials")
        return prim

    def node(self, i: int, d: dict) -> Node:
        path = f"$.nodes[{i}]"
        name, extras = self.named(d, path)
        n = Node(name=name, extras=extras)
        kids = self.get(d, "children", path, "array", [])
        nn = len(self.items("nodes"))
        for k, c in enumerate(kids):
            if not (isinstance(c, int) and not isinstance(c, bool) and 0 <= c < nn):
                raise self.fail(f"{path}.children[{k}]", "child is not a node",
                                expected=f"0..{nn - 1}", found=c)
        n.children = [int(c) for c in kids]
        if "matrix" in d:
            m = mat4_from_gltf(self.numbers(d, "matrix", path, 16, None))
            if not np.array_equal(m, np.eye(4)):
                n.matrix = m
        t = self.numbers(d, "translation", path, 3, None)
        r = self.numbers(d, "rotation", path, 4, None)
        s = self.numbers(d, "scale", path, 3, None)
        if n.matrix is not None and (t or r or s):
            self.warnings.append(f"nodes[{i}]: both matrix and TRS; matrix used")
        elif n.matrix is None:
            n.translation = np.array(t) if t is not None else None
            n.rotation = np.array(r) if r is not None else None
            n.scale = np.array(s) if s is not None else None
        n.mesh = self.index(d, "mesh", path, "meshes")
        n.skin = self.index(d, "skin", path, "skins")
        if n.mesh is not None and "weights" in d:
            n.extras.setdefault("morphWeights", self.numbers(
                d, "weights", path, len(d["weights"]) if isinstance(d["weights"], list) else -1,
                None))
        return n

    def check_tree(self, scene: Scene) -> None:
        parent: dict = {}
        for i, n in enumerate(scene.nodes):
            for k, c in enumerate(n.children):
                if c in parent or c == i:
                    raise self.fail(f"$.nodes[{i}].children[{k}]",
                                    f"node {c} has two parents" if c in parent else
                                    "node is its own child", found=c)
                parent[c] = i
        depth: dict = {}
        for i in range(len(scene.nodes)):       # cycle and depth check, linear overall
            chain = []
            j = i
            while j in parent and j not in depth:
                chain.append(j)
                if len(chain) > len(scene.nodes):
                    raise self.fail(f"$.nodes[{i}]", "node hierarchy has a cycle")
                j = parent[j]
            base = depth.get(j, 0)
            for k, c in enumerate(reversed(chain)):
                depth[c] = base + k + 1
            if chain and depth[chain[0]] > self.limits.max_depth:
                raise LimitError("node hierarchy deeper than the limit", path=f"$.nodes[{i}]",
                                 expected=f"<= {self.limits.max_depth}", found=depth[chain[0]])

    def skin(self, i: int, d: dict) -> Skin:
        path = f"$.skins[{i}]"
        joints = self.get(d, "joints", path, "array", required=True)
        nn = len(self.items("nodes"))
        if not joints:
            raise self.fail(path + ".joints", "skin without joints")
        for k, j in enumerate(joints):
            if not (isinstance(j, int) and not isinstance(j, bool) and 0 <= j < nn):
                raise self.fail(f"{path}.joints[{k}]", "joint is not a node", found=j)
        sk = Skin(joints=[int(j) for j in joints], name=self.get(d, "name", path, "string", ""),
                  skeleton=self.index(d, "skeleton", path, "nodes"), extras=self.extras(d))
        ai = self.index(d, "inverseBindMatrices", path, "accessors")
        if ai is not None:
            m = self.floats(ai, path + ".inverseBindMatrices", (16,))
            if len(m) != len(joints):
                raise CountError("one inverse bind matrix per joint",
                                 path=path + ".inverseBindMatrices", expected=len(joints),
                                 found=len(m))
            sk.inverse_bind_matrices = mat4_from_gltf(m.astype(np.float64))
        return sk

    def check_joint_indices(self, scene: Scene) -> None:
        for ni, n in enumerate(scene.nodes):
            if n.skin is None or n.mesh is None:
                continue
            nj = len(scene.skins[n.skin].joints)
            for pi, p in enumerate(scene.meshes[n.mesh].primitives):
                if p.joints is None:
                    continue
                used = p.joints[p.weights > 0] if p.weights is not None else p.joints
                if used.size and int(used.max()) >= nj:
                    raise CountError("joint index outside the skin's joints",
                                     path=f"$.meshes[{n.mesh}].primitives[{pi}].attributes."
                                     "JOINTS_0", expected=f"< {nj} (skin {n.skin})",
                                     found=int(used.max()))

    def merge_per_node_animations(self, anims: list) -> list:
        """One clip from animations that are one motion split per node.

        COLLADA2GLTF (behind many older glTF files, Khronos' RiggedFigure and
        CesiumMan among them) writes one unnamed animation per animated node. A
        viewer plays one at a time, so each moves one bone; a game format would get
        a clip per bone. The split is recognised when every animation is unnamed,
        there are at least two, their target nodes are disjoint, and all span the
        same time range. They are then merged, with a warning; anything else is
        left as it is."""
        if len(anims) < 2 or any(a.name for a in anims):
            return anims
        seen: set = set()
        spans = set()
        for a in anims:
            nodes = {c.node for c in a.channels}
            if not nodes or nodes & seen:
                return anims
            seen |= nodes
            times = [c.times for c in a.channels if len(c.times)]
            if not times:
                return anims
            spans.add((round(min(float(t[0]) for t in times), 5),
                       round(max(float(t[-1]) for t in times), 5)))
        if len(spans) != 1:
            return anims
        self.warnings.append(f"{len(anims)} unnamed animations, each on its own nodes over the same "
                             "time range, merged into one (one motion split per node, as "
                             "COLLADA2GLTF writes it)")
        return [Animation(name="", channels=[c for a in anims for c in a.channels],
                          extras={"merged": len(anims)})]

    def animation(self, ai: int, d: dict, scene: Scene) -> Optional[Animation]:
        path = f"$.animations[{ai}]"
        samplers = self.get(d, "samplers", path, "array", required=True)
        channels = self.get(d, "channels", path, "array", required=True)
        name, extras = self.named(d, path)
        anim = Animation(name=name, extras=extras)
        taken: set = set()          # (node, path) of the channels kept
        repeated = 0
        for ci, c in enumerate(channels):
            cpath = f"{path}.channels[{ci}]"
            if not isinstance(c, dict):
                raise self.fail(cpath, "must be an object", found=_kind(c))
            target = self.get(c, "target", cpath, "object", required=True)
            tpath = cpath + ".target"
            tpath_name = self.get(target, "path", tpath, "string", required=True)
            node = self.index(target, "node", tpath, "nodes")
            if node is None:                  # targets an extension's object, or nothing
                self.warnings.append(f"{tpath}: no target node; channel ignored" + (
                    " (an extension's target)" if "extensions" in target else ""))
                continue
            if tpath_name not in ("translation", "rotation", "scale", "weights"):
                self.warnings.append(f"{tpath}: animated property {tpath_name!r} ignored")
                continue
            if (node, tpath_name) in taken:     # (a few bytes each, repeating a sampler)
                repeated += 1
                continue
            si = self.get(c, "sampler", cpath, "integer", required=True)
            if not 0 <= si < len(samplers) or not isinstance(samplers[si], dict):
                raise self.fail(cpath + ".sampler", "sampler does not exist",
                                expected=f"0..{len(samplers) - 1}", found=si)
            s = samplers[si]
            spath = f"{path}.samplers[{si}]"
            interp = self.get(s, "interpolation", spath, "string", "LINEAR")
            if interp not in ("LINEAR", "STEP", "CUBICSPLINE"):
                raise self.fail(spath + ".interpolation", "unknown interpolation",
                                expected="LINEAR, STEP or CUBICSPLINE", found=interp)
            ii = self.index(s, "input", spath, "accessors", required=True)
            times = self.floats(ii, spath + ".input", (1,))[:, 0]
            if ii not in self.checked_times:    # (samplers often share their times)
                if not np.all(np.isfinite(times)) or (len(times) > 1 and
                                                      np.any(np.diff(times) <= 0)):
                    raise self.fail(spath + ".input", "key times must be finite and strictly "
                                    "increasing")
                self.checked_times.add(ii)
            per_key = 3 if interp == "CUBICSPLINE" else 1
            oi = self.index(s, "output", spath, "accessors", required=True)
            if tpath_name == "weights":
                out = self.floats(oi, spath + ".output", (1, 2, 3, 4))
                mesh = scene.nodes[node].mesh
                ntargets = len(scene.meshes[mesh].primitives[0].targets) \
                    if mesh is not None and scene.meshes[mesh].primitives else 0
                if not ntargets:
                    self.warnings.append(f"{cpath}: weights channel on a node without morph "
                                         "targets ignored")
                    continue
                values = out.reshape(-1)
                if values.size != len(times) * per_key * ntargets:
                    raise CountError("weights output does not match keys x targets",
                                     path=spath + ".output",
                                     expected=len(times) * per_key * ntargets, found=values.size)
                values = values.reshape(len(times) * per_key, ntargets)
            else:
                ncomp = _PATH_SIZES[tpath_name]
                values = self.floats(oi, spath + ".output", (ncomp,))
                if len(values) != len(times) * per_key:
                    raise CountError("sampler output count does not match its input",
                                     path=spath + ".output", expected=len(times) * per_key,
                                     found=len(values))
                if scene.nodes[node].matrix is not None:
                    from .xform import decompose_matrix
                    t, r, sc = decompose_matrix(scene.nodes[node].matrix)
                    n = scene.nodes[node]
                    n.matrix, n.translation, n.rotation, n.scale = None, t, r, sc
                    self.warnings.append(f"nodes[{node}]: animated node's matrix read as TRS")
            self.charge_keys(len(times) + values.size, cpath)
            taken.add((node, tpath_name))
            anim.channels.append(Channel(node=node, path=tpath_name, times=times,
                                         values=values, interpolation=interp))
        if repeated:
            self.warnings.append(f"{path}: {repeated} channel(s) ignored: their node's property "
                                 "is animated by an earlier channel (glTF allows one per target)")
        return anim


def _short_uri(uri: str) -> str:
    return uri if len(uri) <= 80 else uri[:60] + "..."


def _sniff_image(data: bytes) -> Optional[str]:
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:12] == b"\xabKTX 20\xbb\r\n\x1a\n":
        return "image/ktx2"
    return None
