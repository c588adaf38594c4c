"""A small headless glTF renderer (numpy + Pillow) for checking conventions.

Renders a .glb/.gltf from four orthographic views (front = camera on +Z,
right = camera on +X, top = camera on +Y, and a 3/4 view) into one PNG:
z-buffer, Lambert shading, base colour factor x texture (through its sampler:
wrap modes, bilinear unless ``magFilter`` is NEAREST) x vertex colour, skinning and morph weights evaluated at a chosen animation time.
Colour is handled as glTF defines it: texels of the base colour and emissive
textures are sRGB-encoded and decoded to linear light; ``baseColorFactor``,
``COLOR_0`` and ``emissiveFactor`` are linear already.  The base colour
(texel x factor x COLOR_0), its shading and the emission added to it, and the
blending of ``BLEND`` surfaces, are all in linear light; the finished pixel is
sRGB-encoded for the PNG.  Alpha is never passed through the transfer function.
Alpha is honoured as a viewer does: ``MASK`` drops fragments below the
cutoff, ``BLEND`` surfaces are composited over the opaque ones, ``OPAQUE``
ignores alpha.  ``KHR_texture_transform`` moves the texture's UVs (the
reader's own transform), ``EXT_mesh_gpu_instancing`` draws the mesh once per
instance, and a node whose world matrix mirrors (negative determinant)
swaps its triangles' front face, as glTF defines.  A texture taken from
``EXT_texture_webp`` is drawn; one Pillow cannot decode
(``KHR_texture_basisu``'s KTX2) is drawn untextured, with a note in the caption.
BACK faces are drawn magenta-tinted so wrong winding shows at a glance; a
small RGB axis tripod (X red, Y green, Z blue) is drawn in each view.

    python -m potsherd.cli.render model.glb out.png [--time 0.5] [--animation 0]
"""
from __future__ import annotations

import base64
import io
import json
import os
import struct
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from ..core.errors import FormatError, LimitError
from ..core.limits import DEFAULT_LIMITS
from ..scene.bake_colors import linear_to_srgb, sample, srgb_to_linear, wrap_index
from ..scene.gltf_access import GltfAccess
from ..scene.gltf_instancing import drawn_budget
from ..scene.geometry import strip_or_fan_triangles
from ..scene.gltf_read import GltfInstances, texture_transform
from ..scene.ops import normal_matrices, skin_blend
from ..scene.model import LINEAR_FILTER, NEAREST, REPEAT
from ..scene.xform import quat_slerp, trs_to_matrix

KTX2_MAGIC = b"\xabKTX 20\xbb\r\n\x1a\n"

_DT = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32,
       5126: np.float32}
_NC = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}

# The picture's fixed colours, given as the sRGB values they show as; the
# rasteriser works with their linear-light equivalents.
#: the clear colour (sRGB)
BACKGROUND = (0.22, 0.24, 0.27)
#: a back face shows as half its sRGB colour plus this: a marker, not light, so
#: it is mixed in sRGB (as loud on dark and light colours as it always was)
BACK_TINT = (0.5, 0.0, 0.5)
#: the lowest shade (the side turned from the light), in linear light: the
#: sRGB 0.35 the renderer's unlit side showed before it shaded in linear light
AMBIENT = float(srgb_to_linear(0.35))


# ---- loading -----------------------------------------------------------------

class Gltf:
    """A parsed glTF: ``json`` plus accessor/image readers."""

    def __init__(self, path: str) -> None:
        self.folder = os.path.dirname(os.path.abspath(path))
        from ..containers import read_file_bytes
        data = read_file_bytes(path, DEFAULT_LIMITS)   # the file named, within the input limit
        self.glb_bin = None
        if data[:4] == b"glTF":
            _, _, length = struct.unpack_from("<III", data, 0)
            pos = 12
            while pos < length:
                clen, ctype = struct.unpack_from("<II", data, pos)
                chunk = data[pos + 8: pos + 8 + clen]
                if ctype == 0x4E4F534A:
                    self.json = json.loads(chunk.decode("utf-8"))
                elif ctype == 0x004E4942:
                    self.glb_bin = chunk
                pos += 8 + clen
        else:
            self.json = json.loads(data.decode("utf-8"))
        # buffers and images by the reader's rule for referenced files (inside the
        # glTF's folder tree, regular files, within the input limits)
        self._access = GltfAccess(data, self.folder, DEFAULT_LIMITS)
        self.buffers = [self._load_uri(b.get("uri")) if "uri" in b else self.glb_bin
                        for b in self.json.get("buffers", [])]
        self._acc_cache: dict = {}
        self._image_cache: dict = {}
        self._linear_cache: dict = {}     # id(image array) -> (array, linear copy)
        self.instances = GltfInstances(data, self.folder)
        #: vertices instanced copies may add (the reader's bound)
        self.copy_budget = drawn_budget(DEFAULT_LIMITS, len(data))
        #: what could not be drawn as the file asks (shown in the caption)
        self.notes: list = []

    def _load_uri(self, uri: str) -> bytes:
        if not isinstance(uri, str):
            raise FormatError("a buffer or image uri must be a string", found=type(uri).__name__)
        return self._access.load_uri(uri, "uri")

    def view_bytes(self, vi: int) -> bytes:
        v = self.json["bufferViews"][vi]
        buf = self.buffers[v["buffer"]]
        off = v.get("byteOffset", 0)
        return buf[off: off + v["byteLength"]]

    def accessor(self, ai: int) -> np.ndarray:
        """Accessor as float64 (normalised integers scaled) or integers, shape (count, n)."""
        if ai in self._acc_cache:
            return self._acc_cache[ai]
        a = self.json["accessors"][ai]
        dt = np.dtype(_DT[a["componentType"]]).newbyteorder("<")
        n = _NC[a["type"]]
        count = a["count"]
        if "bufferView" in a:
            v = self.json["bufferViews"][a["bufferView"]]
            raw = self.view_bytes(a["bufferView"])
            stride = v.get("byteStride", dt.itemsize * n)
            off = a.get("byteOffset", 0)
            out = np.ndarray((count, n), dtype=dt, buffer=raw, offset=off,
                             strides=(stride, dt.itemsize)).copy()
        else:
            out = np.zeros((count, n), dt)
        sparse = a.get("sparse")
        if sparse:  # (the listed elements replaced: morph targets, edited copies)
            k = sparse["count"]
            si, sv = sparse["indices"], sparse["values"]
            idt = np.dtype(_DT[si["componentType"]]).newbyteorder("<")
            where = np.frombuffer(self.view_bytes(si["bufferView"]), idt, k,
                                  si.get("byteOffset", 0)).astype(np.int64)
            out[where] = np.frombuffer(self.view_bytes(sv["bufferView"]), dt, k * n,
                                       sv.get("byteOffset", 0)).reshape(k, n)
        if a.get("normalized"):
            # (signed: c / (2^(b-1) - 1), clamped at -1, as the glTF spec reads them)
            out = np.maximum(out.astype(np.float64) / float(np.iinfo(dt).max), -1.0)
        self._acc_cache[ai] = out
        return out

    def decode_draco(self, p: dict) -> None:
        """A ``KHR_draco_mesh_compression`` primitive's values, decoded with
        DracoPy, in the accessor cache under the accessors it names (as the
        importers' reader, :mod:`potsherd.scene.gltf_draco`, does)."""
        ext = (p.get("extensions") or {}).get("KHR_draco_mesh_compression")
        if not isinstance(ext, dict) or p["attributes"].get("POSITION") in self._acc_cache:
            return
        import DracoPy
        mesh = DracoPy.decode(bytes(self.view_bytes(ext["bufferView"])))
        for semantic, uid in ext.get("attributes", {}).items():
            ai = p["attributes"].get(semantic)
            found = mesh.get_attribute_by_unique_id(uid) if ai is not None else None
            if found is None:
                continue
            vals = np.asarray(found["data"])
            vals = vals.reshape(len(vals), -1)
            if self.json["accessors"][ai].get("normalized") and vals.dtype.kind in "iu":
                vals = np.maximum(vals / float(np.iinfo(vals.dtype).max), -1.0)
            self._acc_cache[ai] = vals
        if "indices" in p:
            self._acc_cache[p["indices"]] = np.asarray(mesh.faces, np.int64).reshape(-1, 1)

    def image(self, ii: int) -> np.ndarray | None:
        """Image ``ii`` as RGBA floats in [0, 1], as stored (colour sRGB-encoded,
        alpha linear), decoded once (atlases serve many primitives); None, with
        a note, when Pillow cannot decode it (KTX2)."""
        cache = self._image_cache
        if ii not in cache:
            im = self.json["images"][ii]
            try:
                data = self.view_bytes(im["bufferView"]) if "bufferView" in im else \
                    self._load_uri(im["uri"])
            except FormatError as e:      # refused or missing: drawn untextured, said so
                self.notes.append(f"image {ii}: {e.message}: drawn untextured")
                cache[ii] = None
                return None
            try:
                cache[ii] = np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"),
                                       dtype=np.float64) / 255.0
            except (OSError, ValueError) as e:        # (UnidentifiedImageError is an OSError)
                kind = "KTX2" if bytes(data[:12]) == KTX2_MAGIC or \
                    im.get("mimeType") == "image/ktx2" else f"undecodable ({e})"
                self.notes.append(f"image {ii} is {kind}: drawn untextured")
                cache[ii] = None
        return cache[ii]

    def texture_image(self, ti: int) -> int | None:
        """The image texture ``ti`` shows: ``source``, else the image an extension
        names (``EXT_texture_webp``, which Pillow decodes, then any other by name:
        ``KHR_texture_basisu``), the order potsherd's reader uses."""
        t = self.json["textures"][ti]
        if "source" in t:
            return t["source"]
        ext = t.get("extensions") or {}
        for name in sorted(ext, key=lambda k: (k != "EXT_texture_webp", k)):
            if isinstance(ext[name], dict) and "source" in ext[name]:
                return ext[name]["source"]
        self.notes.append(f"texture {ti} has no image: drawn untextured")
        return None

    def linear(self, tex: np.ndarray | None) -> np.ndarray | None:
        """An image from :meth:`image` with its RGB decoded to linear light (alpha
        as is), once per image: the bilinear filter works in linear light."""
        if tex is None:
            return None
        got = self._linear_cache.get(id(tex))
        if got is None or got[0] is not tex:
            got = (tex, np.concatenate([srgb_to_linear(tex[..., :3]), tex[..., 3:]], axis=-1))
            self._linear_cache[id(tex)] = got
        return got[1]

    def sampler(self, info: dict) -> tuple:
        """``(wrap_s, wrap_t, linear)`` of a texture info's sampler: glTF's
        defaults are REPEAT and, for an unset filter, what viewers use, linear."""
        si = self.json["textures"][info["index"]].get("sampler")
        samplers = self.json.get("samplers", [])
        smp = samplers[si] if isinstance(si, int) and 0 <= si < len(samplers) else {}
        return (int(smp.get("wrapS", REPEAT)), int(smp.get("wrapT", REPEAT)),
                smp.get("magFilter", LINEAR_FILTER) != NEAREST)

    def texture(self, info: dict, at: dict, idx: np.ndarray) -> tuple:
        """(RGBA image, per-corner UVs (T, 3, 2)) of a material's texture info, its
        KHR_texture_transform applied as the reader bakes it; (None, None) when
        the primitive lacks the UV set or the image cannot be drawn."""
        k = info.get("texCoord", 0)
        tt = (info.get("extensions") or {}).get("KHR_texture_transform")
        matrix = None
        if tt is not None:
            matrix, k, problems = texture_transform(tt, k)
            self.notes.extend(problems)
        tc = f"TEXCOORD_{k}"
        if tc not in at:
            return None, None
        src = self.texture_image(info["index"])
        tex = self.image(src) if src is not None else None
        if tex is None:
            return None, None
        uv = self.accessor(at[tc]).astype(float)
        if matrix is not None:
            uv = uv @ matrix[:, :2].T + matrix[:, 2]
        return tex, uv[idx]


# ---- evaluation ----------------------------------------------------------------

def _sample(times: np.ndarray, values: np.ndarray, interp: str, t: float, path: str) -> np.ndarray:
    if interp == "CUBICSPLINE":
        values = values.reshape(len(times), 3, -1)[:, 1]
        interp = "LINEAR"
    if t <= times[0]:
        return values[0]
    if t >= times[-1]:
        return values[-1]
    i = int(np.searchsorted(times, t, side="right")) - 1
    if interp == "STEP":
        return values[i]
    u = (t - times[i]) / (times[i + 1] - times[i])
    if path == "rotation":
        return quat_slerp(values[i], values[i + 1], u)
    return values[i] * (1 - u) + values[i + 1] * u


def evaluate(g: Gltf, animation: int | None, t: float) -> tuple:
    """World matrices of all nodes and morph weights per node at time ``t``."""
    nodes = g.json.get("nodes", [])
    trs = []
    for n in nodes:
        if "matrix" in n:
            trs.append(["m", np.array(n["matrix"], float).reshape(4, 4).T])
        else:
            trs.append([np.array(n.get("translation", [0, 0, 0]), float),
                        np.array(n.get("rotation", [0, 0, 0, 1]), float),
                        np.array(n.get("scale", [1, 1, 1]), float)])
    weights: dict = {}
    for i, n in enumerate(nodes):
        if "mesh" in n:
            mw = g.json["meshes"][n["mesh"]].get("weights")
            if n.get("weights") is not None:
                mw = n["weights"]
            if mw:
                weights[i] = np.array(mw, float)
    anims = g.json.get("animations", [])
    if animation is not None and 0 <= animation < len(anims):
        an = anims[animation]
        for ch in an["channels"]:
            s = an["samplers"][ch["sampler"]]
            node, path = ch["target"].get("node"), ch["target"]["path"]
            if node is None:
                continue
            times = g.accessor(s["input"])[:, 0].astype(float)
            vals = g.accessor(s["output"]).astype(float)
            if path == "weights":
                vals = vals.reshape(len(times) * (3 if s.get("interpolation") == "CUBICSPLINE"
                                                  else 1), -1)
            v = _sample(times, vals, s.get("interpolation", "LINEAR"), t, path)
            if path == "weights":
                weights[node] = np.asarray(v, float)
            elif not isinstance(trs[node][0], str):
                trs[node][{"translation": 0, "rotation": 1, "scale": 2}[path]] = np.asarray(v)
    local = [x[1] if isinstance(x[0], str) else trs_to_matrix(x[0], x[1], x[2]) for x in trs]
    world: list = [None] * len(nodes)
    sc = g.json.get("scenes", [{}])[g.json.get("scene", 0)] if g.json.get("scenes") else {}
    stack = [(r, np.eye(4)) for r in sc.get("nodes", [])]
    while stack:
        i, parent = stack.pop()
        world[i] = parent @ local[i]
        stack.extend((c, world[i]) for c in nodes[i].get("children", []))
    return world, weights


def node_matrices(g: Gltf, ni: int, world: np.ndarray) -> np.ndarray:
    """(K, 4, 4) matrices node ``ni``'s mesh is drawn with: its world matrix, or
    world x each EXT_mesh_gpu_instancing instance's TRS (checked by the reader,
    which parses the file again only when a node has the extension)."""
    ext = g.json["nodes"][ni].get("extensions")
    if not isinstance(ext, dict) or "EXT_mesh_gpu_instancing" not in ext:
        return world[None]
    trs = g.instances.trs(ni)
    if trs is None:
        return world[None]
    return world @ trs_to_matrix(*trs)


def scene_triangles(g: Gltf, animation: int | None = None, t: float = 0.0) -> list:
    """Posed triangles: list of dicts (pos (T,3,3), nrm, uv, color (T,3,4), tex, double).

    ``color`` is COLOR_0 x baseColorFactor, linear light (both are linear in
    glTF); ``tex`` and ``etex`` are the images as stored, sRGB-encoded colour
    (decoded to linear per fragment by :func:`_fragment_rgba` and the
    rasteriser); ``emissive`` is emissiveFactor, linear.

    Corners are in the order that makes a front face counter-clockwise: a
    triangle drawn with a mirroring matrix (the node's world matrix, times
    the instance's, has a negative determinant: glTF's rule, which holds for a
    skinned mesh's node too) is reversed.
    An instanced mesh gives every instance's triangles, one after another."""
    world, weights = evaluate(g, animation, t)
    out = []
    budget = g.copy_budget
    for ni, n in enumerate(g.json.get("nodes", [])):
        if "mesh" not in n or world[ni] is None:
            continue
        mats = node_matrices(g, ni, world[ni])
        mesh = g.json["meshes"][n["mesh"]]
        for p in mesh["primitives"]:
            mode = p.get("mode", 4)
            if mode not in (4, 5, 6):   # (points and lines are not drawn)
                continue
            at = p["attributes"]
            g.decode_draco(p)
            pos = g.accessor(at["POSITION"]).astype(float)
            if len(mats) > 1:
                budget -= len(mats) * len(pos)
                if budget < 0:
                    raise LimitError("instanced copies have more vertices than the limit",
                                     path=f"$.nodes[{ni}].extensions.EXT_mesh_gpu_instancing")
            nrm = g.accessor(at["NORMAL"]).astype(float) if "NORMAL" in at else None
            w = weights.get(ni)
            if w is not None and "targets" in p:
                for k, tg in enumerate(p["targets"]):
                    if k < len(w) and w[k] != 0:
                        pos = pos + w[k] * g.accessor(tg["POSITION"])
                        if nrm is not None and "NORMAL" in tg:
                            nrm = nrm + w[k] * g.accessor(tg["NORMAL"])
            if "skin" in n and "JOINTS_0" in at:
                sk = g.json["skins"][n["skin"]]
                jm = np.stack([world[j] if world[j] is not None else np.eye(4) for j in sk["joints"]])
                if "inverseBindMatrices" in sk:
                    ibm = g.accessor(sk["inverseBindMatrices"]).reshape(-1, 4, 4).swapaxes(1, 2)
                    jm = jm @ ibm
                js, ws, s_i = [], [], 0
                while f"JOINTS_{s_i}" in at:
                    js.append(g.accessor(at[f"JOINTS_{s_i}"]).astype(int))
                    ws.append(g.accessor(at[f"WEIGHTS_{s_i}"]).astype(float))
                    s_i += 1
                # (all-zero weights: rigid on the mesh node, as every importer has it)
                m, _ = skin_blend(np.concatenate(js, axis=1), np.concatenate(ws, axis=1), jm,
                                  world[ni])
                m = m[None]                  # (the node's matrix does not place skinned vertices)
                facing = world[ni][None]     # (but its determinant still says which side is front)
            else:
                m = np.broadcast_to(mats[:, None], (len(mats), len(pos), 4, 4))
                facing = mats
            # (K instances, V vertices): positions and normals through each matrix
            pw = np.einsum("kvij,vj->kvi", m[..., :3, :3], pos) + m[..., :3, 3]
            if nrm is not None:
                nm = normal_matrices(m[..., :3, :3].reshape(-1, 3, 3)).reshape(m.shape[:2] + (3, 3))
                nw = np.einsum("kvij,vj->kvi", nm, nrm)
            else:
                nw = None
            idx = g.accessor(p["indices"])[:, 0].astype(int) if "indices" in p \
                else np.arange(len(pos))
            if mode != 4:
                idx = strip_or_fan_triangles(idx, mode).astype(int)
            idx = idx[: len(idx) // 3 * 3].reshape(-1, 3)
            # a mirroring matrix turns the front face over: reverse those triangles
            mirrored = np.linalg.det(facing[:, :3, :3]) < 0          # (K,)
            kidx = np.where(mirrored[:, None, None], idx[None, :, ::-1], idx[None])   # (K, T, 3)
            kk = np.arange(len(m))[:, None, None]
            col = np.ones((len(pos), 4))      # (linear, as COLOR_0 and the factor are)
            if "COLOR_0" in at:
                c = g.accessor(at["COLOR_0"]).astype(float)
                col[:, : c.shape[1]] = c
            mat = g.json["materials"][p["material"]] if "material" in p else {}
            pbr = mat.get("pbrMetallicRoughness", {})
            col = col * np.array(pbr.get("baseColorFactor", [1, 1, 1, 1]))
            flat = kidx.reshape(-1, 3)                  # the corners of every instance's copy
            tex = uv = sampler = None
            if "baseColorTexture" in pbr:
                tex, uv = g.texture(pbr["baseColorTexture"], at, flat)
                sampler = g.sampler(pbr["baseColorTexture"])
            etex = euv = esampler = None
            if "emissiveTexture" in mat:   # added after shading, scaled by emissiveFactor
                etex, euv = g.texture(mat["emissiveTexture"], at, flat)
                esampler = g.sampler(mat["emissiveTexture"])
            out.append({"pos": pw[kk, kidx].reshape(-1, 3, 3),
                        "nrm": None if nw is None else nw[kk, kidx].reshape(-1, 3, 3), "uv": uv,
                        "color": col[flat], "tex": tex, "sampler": sampler,
                        "tex_linear": g.linear(tex), "esampler": esampler,
                        "etex_linear": g.linear(etex), "double": mat.get("doubleSided", False),
                        "blend": mat.get("alphaMode") == "BLEND", "etex": etex, "euv": euv,
                        "emissive": np.array(mat.get("emissiveFactor", [0.0, 0.0, 0.0]), float),
                        "emap": "emissiveTexture" in mat,
                        "alpha": mat.get("alphaMode", "OPAQUE"),
                        "cutoff": float(mat.get("alphaCutoff", 0.5))})
    return out


# ---- rasterising -----------------------------------------------------------------

VIEWS = {
    "front (+Z)": (np.array([0.0, 0.0, -1.0]), np.array([0.0, 1.0, 0.0])),
    "right (+X)": (np.array([-1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])),
    "top (+Y)": (np.array([0.0, -1.0, 0.0]), np.array([0.0, 0.0, -1.0])),
    "3/4": (-np.array([1.0, 0.8, 1.4]) / np.linalg.norm([1.0, 0.8, 1.4]), np.array([0.0, 1.0, 0.0])),
}


def _basis(d: np.ndarray, up: np.ndarray) -> np.ndarray:
    r = np.cross(d, up)
    r /= np.linalg.norm(r)
    u = np.cross(r, d)
    return np.stack([r, u, d])


def _raster(tris: list, basis: np.ndarray, size: int, bounds: tuple) -> np.ndarray:
    """The picture of ``tris`` in one view, (size, size, 3) sRGB-encoded floats
    in [0, 1]; everything before the encoding is linear light."""
    lo, hi = bounds
    span = max(hi[0] - lo[0], hi[1] - lo[1], 1e-9) * 1.1
    cx, cy = (lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2
    scale = size / span
    img = np.empty((size, size, 3))
    img[:] = srgb_to_linear(BACKGROUND)
    zbuf = np.full(size * size, np.inf)
    light = -basis[2] * 0.6 + basis[1] * 0.6 + basis[0] * 0.3
    light /= np.linalg.norm(light)
    # blended surfaces last, over what is opaque (they test depth but do not write it)
    for tr in sorted(tris, key=lambda t: t.get("alpha") == "BLEND"):
        mode = tr.get("alpha", "OPAQUE")
        p = tr["pos"] @ basis.T                      # (T, 3, 3): x, y screen, z depth
        sx = (p[..., 0] - cx) * scale + size / 2
        sy = size / 2 - (p[..., 1] - cy) * scale     # image rows go down
        z = p[..., 2]
        # signed area in y-up screen space: > 0 counter-clockwise = front
        x0, x1, x2 = sx[:, 0], sx[:, 1], sx[:, 2]
        y0, y1, y2 = sy[:, 0], sy[:, 1], sy[:, 2]
        area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)   # image space: flipped sign
        front = area < 0
        ok = np.abs(area) > 1e-12
        face_n = np.cross(tr["pos"][:, 1] - tr["pos"][:, 0], tr["pos"][:, 2] - tr["pos"][:, 0])
        ti = np.nonzero(ok)[0]
        if not len(ti):
            continue
        xmin = np.clip(np.floor(np.min(sx[ti], 1)), 0, size - 1).astype(int)
        xmax = np.clip(np.ceil(np.max(sx[ti], 1)), 0, size - 1).astype(int)
        ymin = np.clip(np.floor(np.min(sy[ti], 1)), 0, size - 1).astype(int)
        ymax = np.clip(np.ceil(np.max(sy[ti], 1)), 0, size - 1).astype(int)
        w = xmax - xmin + 1
        h = ymax - ymin + 1
        npx = w * h
        # chunk triangles so the fragment arrays stay small
        order = np.arange(len(ti))
        start = 0
        while start < len(order):
            csum = np.cumsum(npx[start:])
            end = start + max(1, int(np.searchsorted(csum, 2_000_000)))
            sel = order[start:end]
            start = end
            cnt = npx[sel]
            tri = np.repeat(ti[sel], cnt)
            k = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            ww = np.repeat(w[sel], cnt)
            px = np.repeat(xmin[sel], cnt) + k % ww
            py = np.repeat(ymin[sel], cnt) + k // ww
            fx, fy = px + 0.5, py + 0.5
            a = area[tri]
            b0 = ((sx[tri, 1] - fx) * (sy[tri, 2] - fy) - (sx[tri, 2] - fx) * (sy[tri, 1] - fy)) / a
            b1 = ((sx[tri, 2] - fx) * (sy[tri, 0] - fy) - (sx[tri, 0] - fx) * (sy[tri, 2] - fy)) / a
            b2 = 1 - b0 - b1
            inside = (b0 >= -1e-9) & (b1 >= -1e-9) & (b2 >= -1e-9)
            tri, px, py, b0, b1, b2 = (x[inside] for x in (tri, px, py, b0, b1, b2))
            if mode in ("MASK", "BLEND"):
                # a texel cut out by its alpha is not there: what is behind shows through
                alpha = _fragment_rgba(tr, tri, np.stack([b0, b1, b2], 1)[:, :, None])[:, 3]
                keep = alpha >= tr.get("cutoff", 0.5) if mode == "MASK" else alpha > 1.0 / 512
                tri, px, py, b0, b1, b2 = (x[keep] for x in (tri, px, py, b0, b1, b2))
            depth = b0 * z[tri, 0] + b1 * z[tri, 1] + b2 * z[tri, 2]
            pix = py * size + px
            o = np.lexsort((depth, pix))
            pix, depth, tri, b0, b1, b2 = (x[o] for x in (pix, depth, tri, b0, b1, b2))
            first = np.ones(len(pix), bool)
            first[1:] = pix[1:] != pix[:-1]
            pix, depth, tri, b0, b1, b2 = (x[first] for x in (pix, depth, tri, b0, b1, b2))
            win = depth < zbuf[pix]
            pix, depth, tri, b0, b1, b2 = (x[win] for x in (pix, depth, tri, b0, b1, b2))
            if not len(pix):
                continue
            if mode != "BLEND":
                zbuf[pix] = depth
            bc = np.stack([b0, b1, b2], 1)[:, :, None]
            col = _fragment_rgba(tr, tri, bc)
            if tr["nrm"] is not None:
                n = (tr["nrm"][tri] * bc).sum(1)
            else:
                n = face_n[tri]
            n = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
            fr = front[tri]
            n = np.where(fr[:, None], n, -n)
            # Lambert in linear light (the base colour is linear: _fragment_rgba)
            shade = AMBIENT + (1.0 - AMBIENT) * np.clip(n @ light, 0, 1)
            rgb = col[:, :3] * shade[:, None]
            # emission, linear: emissiveFactor x the sRGB-decoded emissive texel
            # (a material without an emissive texture emits its factor: glTF's
            # white default; one whose texture cannot be drawn emits nothing)
            if tr.get("etex") is not None:
                euv = (tr["euv"][tri] * bc).sum(1)
                texel = _texels(tr["etex"], tr.get("etex_linear"), euv, tr.get("esampler"))
                rgb = rgb + texel[:, :3] * tr["emissive"][:3]
            elif not tr.get("emap") and np.any(tr.get("emissive", 0.0)):
                rgb = rgb + tr["emissive"][:3]
            back = ~fr
            if back.any():          # (the marker, mixed in sRGB: BACK_TINT)
                rgb[back] = srgb_to_linear(linear_to_srgb(rgb[back]) * 0.5 + np.array(BACK_TINT))
            if mode == "BLEND":     # (over what is drawn, in linear light; alpha is linear)
                a = np.clip(col[:, 3:4], 0.0, 1.0)
                rgb = rgb * a + img.reshape(-1, 3)[pix] * (1.0 - a)
            img.reshape(-1, 3)[pix] = rgb
    return linear_to_srgb(img)


def _texels(tex: np.ndarray, lin: np.ndarray | None, uv: np.ndarray,
            sampler: tuple | None) -> np.ndarray:
    """Texels of ``tex`` (RGBA as stored, sRGB colour; ``lin``: the same with its
    RGB in linear light) at ``uv``, RGB in linear light: through the sampler's
    wrap modes, filtered bilinearly in linear light (as a GPU filters an sRGB
    texture) unless its ``magFilter`` is NEAREST."""
    ws, wt, linear = sampler if sampler is not None else (REPEAT, REPEAT, True)
    if linear and lin is not None:
        return sample(lin, uv, ws, wt)
    th, tw = tex.shape[:2]
    u = wrap_index(np.floor(np.nan_to_num(uv[:, 0]) * tw).astype(np.int64), tw, ws)
    v = wrap_index(np.floor(np.nan_to_num(uv[:, 1]) * th).astype(np.int64), th, wt)
    texel = tex[v, u]
    return np.concatenate([srgb_to_linear(texel[:, :3]), texel[:, 3:]], axis=1)


def _fragment_rgba(tr: dict, tri: np.ndarray, bc: np.ndarray) -> np.ndarray:
    """Base colour of fragments, RGBA in linear light: vertex colour x factor
    (linear) x the texel (:func:`_texels`: the sampler's wrap and filter, its RGB
    sRGB-decoded, its alpha linear)."""
    col = (tr["color"][tri] * bc).sum(1)
    if tr["tex"] is not None:
        uv = (tr["uv"][tri] * bc).sum(1)
        col = col * _texels(tr["tex"], tr.get("tex_linear"), uv, tr.get("sampler"))
    return col


def _levels(img: np.ndarray) -> Image.Image:
    """An sRGB-encoded float picture as 8-bit levels (rounded to the nearest)."""
    return Image.fromarray(np.rint(np.clip(img, 0, 1) * 255).astype(np.uint8))


def render(path: str, *, animation: int | None = 0, time: float = 0.0, size: int = 256,
           views: tuple = tuple(VIEWS)) -> Image.Image:
    """Render ``path`` to a Pillow image (one tile per view, labelled)."""
    g = Gltf(path)
    if not g.json.get("animations"):
        animation = None
    tris = scene_triangles(g, animation, time)
    allp = np.concatenate([t["pos"].reshape(-1, 3) for t in tris]) if tris else np.zeros((1, 3))
    tiles = []
    for name in views:
        d, up = VIEWS[name]
        basis = _basis(d, up)
        q = allp @ basis.T
        bounds = (q.min(0), q.max(0))
        img = _raster(tris, basis, size, bounds)
        tile = _levels(img)
        dr = ImageDraw.Draw(tile)
        dr.text((4, 2), name, fill=(255, 255, 255))
        # axis tripod
        o = np.array([22.0, size - 22.0])
        for axis, colr in ((0, (255, 60, 60)), (1, (60, 255, 60)), (2, (80, 120, 255))):
            v = basis[:2, axis] * 16
            dr.line([tuple(o), (o[0] + v[0], o[1] - v[1])], fill=colr, width=2)
        tiles.append(tile)
    cols = 2 if len(tiles) > 1 else 1
    rows = (len(tiles) + cols - 1) // cols
    sheet = Image.new("RGB", (cols * size, rows * size + 14), (0, 0, 0))
    for i, tile in enumerate(tiles):
        sheet.paste(tile, ((i % cols) * size, (i // cols) * size + 14))
    anim_name = ""
    if animation is not None:
        anim_name = g.json["animations"][animation].get("name", str(animation))
    ImageDraw.Draw(sheet).text((4, 1), f"{os.path.basename(path)}  anim={anim_name or '-'} "
                               f"t={time:.3f}s  tris={sum(len(t['pos']) for t in tris)}"
                               + _notes_caption(g), fill=(255, 255, 0))
    sheet.info["notes"] = list(dict.fromkeys(g.notes))
    return sheet


def _notes_caption(g: Gltf) -> str:
    """What could not be drawn as the file asks, for the caption."""
    notes = list(dict.fromkeys(g.notes))
    return "  note: " + "; ".join(notes) if notes else ""


def render_camera(path: str, eye: Any, target: Any, *, fov: float = 60.0, size: int = 512,
                  animation: int | None = None, time: float = 0.0,
                  up: Any = (0.0, 1.0, 0.0)) -> Image.Image:
    """A perspective picture from ``eye`` looking at ``target`` (scene units,
    glTF axes), ``fov`` degrees across: a street-level view of a large scene
    (a terrain with its objects), which the orthographic views shrink to a dot.
    Triangles reaching behind the near plane are dropped."""
    g = Gltf(path)
    if not g.json.get("animations"):
        animation = None
    eye = np.asarray(eye, np.float64)
    d = np.asarray(target, np.float64) - eye
    if not np.isfinite(d).all() or np.linalg.norm(d) == 0:
        raise ValueError("camera target must differ from the eye")
    basis = _basis(d / np.linalg.norm(d), np.asarray(up, np.float64))
    near = 0.1
    projected = []
    for tr in scene_triangles(g, animation, time):
        p = (tr["pos"] - eye) @ basis.T
        keep = np.all(p[..., 2] > near, axis=1)
        if not keep.any():
            continue
        p = p[keep]
        q = np.concatenate([p[..., :2] / p[..., 2:3], p[..., 2:3]], axis=-1)
        t2 = {k: (v[keep] if k in ("pos", "nrm", "uv", "euv", "color") and v is not None else v)
              for k, v in tr.items()}
        t2["pos"] = q
        if t2["nrm"] is not None:
            t2["nrm"] = t2["nrm"] @ basis.T
        projected.append(t2)
    half = np.tan(np.radians(min(max(fov, 1.0), 170.0)) / 2) / 1.1   # _raster widens by 1.1
    img = _raster(projected, np.eye(3), size, (np.array([-half, -half]), np.array([half, half])))
    tile = _levels(img)
    ImageDraw.Draw(tile).text((4, 2), f"{os.path.basename(path)} eye={np.round(eye, 1).tolist()} "
                              f"fov={fov:g}" + _notes_caption(g), fill=(255, 255, 0))
    tile.info["notes"] = list(dict.fromkeys(g.notes))
    return tile
