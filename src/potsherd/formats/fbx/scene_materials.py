"""FBX materials -> glTF metallic-roughness materials with every texture slot.

FBX links a texture to a material through a connection whose property names
the slot.  Each exporter names them its own way: the classic FBX surface
(``DiffuseColor``, ``NormalMap``, ``Bump``, ``EmissiveColor``,
``TransparentColor``/``TransparencyFactor``), 3ds Max Physical and glTF
materials (``3dsMax|Parameters|base_color_map``, ``3dsMax|main|metalness_map``,
...), Maya Stingray PBS (``Maya|TEX_color_map``, ...), Maya standardSurface and
Arnold (``Maya|baseColor``, ``Maya|normalCamera``, ...), and Blender, which
stores roughness under ``ShininessExponent`` and metallic under
``ReflectionFactor``.  The slot is read from the last ``|`` component of the
property, lower-cased.

Image bytes come from the ``Content`` of the texture's ``Video`` or of any
``Video`` naming the same file (some exporters embed the content on a clip
the texture is not connected to), else from a file on disk: the
``RelativeFilename`` (backslashes turned into slashes) beside the FBX, then
the absolute ``FileName``'s trailing components beside the FBX and under
``data_root``, each matched case-insensitively.  Only regular files inside
those two folders are read (a hostile file cannot pull ``/etc/...`` into a
glb, nor a FIFO hang the conversion).  glTF wants opacity in the base
colour's alpha channel and metallic (blue) with roughness (green) in one
image: those are combined with Pillow.

Each image records the file it came from in its ``extras``: ``source_file``
(the base name the FBX gives it, also for embedded content, whose clip name
is often not a file name: ``Map #7``, ``Slime_002:file1``), or, for a packed
image, ``source_files`` by channel (``rgb``/``alpha``, ``metallic``/
``roughness``).  The corpus comparison with ufbx reads them
(``tests/fbx/ufbx_materials.py``).
"""
from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ...core.limits import DEFAULT_LIMITS
from ...core.errors import FormatError
from ...resolve import Confinement, Listings, decodes_as_image
from ...scene import CLAMP_TO_EDGE, Image, Material, TextureRef

#: biggest external image read (bytes)
MAX_IMAGE_FILE = 256 * 1024 * 1024
#: most files listed while indexing ``data_root`` by name
MAX_INDEXED_FILES = 200_000

_SLOTS = {
    "base": {"diffusecolor", "diffuse", "base_color_map", "basecolor", "base_color",
             "tex_color_map", "color_map", "basecolormap", "albedo"},
    "opacity": {"transparentcolor", "transparencyfactor", "transparent", "opacity_map",
                "opacity", "cutout_map", "tex_opacity_map", "transparency_map", "alpha"},
    "normal": {"normalmap", "norm_map", "tex_normal_map", "normalcamera", "normal",
               "normal_map", "bump", "bump_map"},
    "emissive": {"emissivecolor", "emissive", "emit_color_map", "emission_color_map",
                 "tex_emissive_map", "emissioncolor", "emission_color", "emissionmap"},
    "metallic": {"metalness_map", "metallic_map", "tex_metallic_map", "metalness",
                 "metallic", "base_metalness"},
    "roughness": {"roughness_map", "tex_roughness_map", "specularroughness",
                  "specular_roughness", "roughness", "glossiness"},
    "occlusion": {"ao_map", "tex_ao_map", "ambientocclusion", "ambient_occlusion",
                  "ao", "occlusion"},
}
#: parameter names node-graph maps keep their bitmap's file name under (last ``|`` part)
_FILE_PARAMETERS = {"filename", "file_name", "filepath", "file", "sourcemap", "bitmap",
                    "texturefilename"}
_BLENDER_SLOTS = {"shininessexponent": "roughness", "reflectionfactor": "metallic"}
#: metallic and roughness values of the PBR materials (3ds Max, Stingray, standardSurface)
_PBR_SCALARS = {
    "metallic": ("3dsMax|main|metalness", "3dsMax|Parameters|metalness", "Maya|metallic",
                 "Maya|metalness"),
    "roughness": ("3dsMax|main|roughness", "3dsMax|Parameters|roughness", "Maya|roughness",
                  "Maya|specularRoughness"),
}
#: slots whose classic and PBR names both occur: the more specific property wins
_BUMP_NAMES = {"bump", "bump_map"}


def texture_slot(prop: str | None, blender: bool) -> str | None:
    """The glTF slot (base, opacity, normal, emissive, metallic, roughness,
    occlusion) for a material property a texture is connected to, or None."""
    if not prop:
        return None
    tail = prop.rsplit("|", 1)[-1].lower()
    if blender and tail in _BLENDER_SLOTS:
        return _BLENDER_SLOTS[tail]
    # 3ds Max names a map after its value with ``_map`` (Physical, OpenPBR:
    # ``base_metalness_map``) or ``Map`` (the glTF material: ``metalnessMap``)
    # (``emission`` alone is a weight: the Physical material's, standardSurface's)
    stem = tail[:-4] if tail.endswith("_map") else tail[:-3] if tail.endswith("map") else tail
    for name in (tail, stem):
        for slot, names in _SLOTS.items():
            if name in names:
                return slot
    return None


class TextureFiles:
    """Finds the image file an FBX texture names, beside the FBX or under
    ``data_root``, without leaving those folders."""

    def __init__(self, source_path: Any, data_root: Any, limits: Any = None) -> None:
        self.roots: list[Path] = []
        if source_path:
            try:
                self.roots.append(Path(os.fsdecode(source_path)).resolve().parent)
            except (OSError, ValueError):
                pass
        self.data_root: Path | None = None
        if data_root:
            try:
                self.data_root = Path(os.fsdecode(data_root)).resolve()
                self.roots.append(self.data_root)
            except (OSError, ValueError):
                pass
        self._listings = Listings(MAX_INDEXED_FILES)
        #: the one rule for reading what the FBX names (potsherd.resolve)
        self.confinement = Confinement(self.roots, limits or DEFAULT_LIMITS)

    def read(self, path: Path, name: str) -> bytes:
        """A found texture file's bytes, opened race-free inside the roots."""
        return self.confinement.read(path, name)

    def find(self, names: list[str]) -> Path | None:
        """The first existing file among ``names`` (relative or absolute, either
        slash), tried as trailing paths below each root; None when absent."""
        tails = []
        for name in names:
            parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
            if parts and parts[0].endswith(":"):
                parts = parts[1:]  # a Windows drive
            for k in range(len(parts)):
                tail = tuple(parts[k:])
                if tail not in tails:
                    tails.append(tail)
        tails.sort(key=len, reverse=True)  # the most specific path first
        for root in self.roots:
            for tail in tails:
                hit = self._walk(root, tail)
                if hit is not None:
                    return hit
        if tails and self.data_root is not None:  # anywhere below data_root, by file name
            return self._indexed(self.data_root, tails[-1][-1])
        return None

    def _walk(self, root: Path, tail: tuple) -> Path | None:
        cur = self._listings.walk(root, tail)
        return cur if cur is not None and self._readable(cur, root) else None

    def _indexed(self, root: Path, name: str) -> Path | None:
        hit = self._listings.by_name(root, name)
        return hit if hit is not None and self._readable(hit, root) else None

    @staticmethod
    def _readable(path: Path, root: Path) -> bool:
        try:
            real = path.resolve()
            st = os.stat(real)
        except (OSError, RuntimeError):
            return False
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_IMAGE_FILE:
            return False
        return real == root or root in real.parents


def layer_element_textures(geometry: Any, textures: list, mat_poly: np.ndarray,
                           n_materials: int) -> dict:
    """FBX 6.x texture slots, which live in the geometry, not on the material:
    ``LayerElementTexture`` (the diffuse colour) and ``LayerElement<Slot>Textures``
    (``Emissive_``, ``Transparent``, ``Bump``, ``NormalMap``, ...), each with a
    ``TextureId`` (one for ``AllSame``, else one per polygon) indexing
    ``textures``: the textures connected to the geometry and its model, in
    connection order.  Returns {material index: [(texture, slot property)]},
    the lowest texture id of a slot first (ufbx's reading)."""
    from .objects import _text_child, _values
    found: set = set()
    for el in geometry.children or ():
        name = el.name.decode("latin-1") if isinstance(el.name, bytes) else str(el.name)
        if name == "LayerElementTexture":
            prop = "Diffuse"
        elif name.startswith("LayerElement") and name.endswith("Textures") and len(name) > 20:
            prop = name[12:-8].rstrip("_")
        else:
            continue
        ids_node = el.find(b"TextureId")
        ids = _values(ids_node, "LayerElementTexture/TextureId").astype(np.int64) \
            if ids_node is not None else np.zeros(1, dtype=np.int64)
        if _text_child(el, b"MappingInformationType") == "AllSame":
            tid = int(ids[0]) if len(ids) else 0
            found.update((m, tid, prop) for m in range(n_materials))
        else:
            k = min(len(ids), len(mat_poly))
            found.update(zip(mat_poly[:k].tolist(), ids[:k].tolist(), [prop] * k))
    out: dict = {}
    for m, tid, prop in sorted(found, key=lambda x: (x[0], x[1], x[2])):
        if 0 <= tid < len(textures) and 0 <= m < n_materials:
            out.setdefault(m, []).append((textures[tid], prop))
    return out


def _pil(data: bytes):
    from PIL import Image as PILImage
    im = PILImage.open(io.BytesIO(data))
    im.load()
    return im


class MaterialBuilder:
    """Makes scene materials and images from FBX Material objects; the FBX
    object graph is reached through the callbacks the scene builder gives."""

    def __init__(self, scene: Any, textures_of: Callable, videos_of: Callable,
                 all_videos: list, files: TextureFiles, blender: bool) -> None:
        self.scene = scene
        self.textures_of = textures_of      # material -> [(texture object, property)]
        self.videos_of = videos_of          # texture -> [video objects]
        self.files = files
        self.blender = blender
        self.images: dict = {}              # (source key, role) -> image index
        self.missing: set = set()
        self.content_by_name: dict = {}
        for v in all_videos:
            data = _content(v)
            if data:
                for n in _file_names(v):
                    base = n.replace("\\", "/").rsplit("/", 1)[-1].lower()
                    if base:
                        self.content_by_name.setdefault(base, (v, data))

    # -- image bytes ---------------------------------------------------
    def source(self, tex: Any) -> tuple | None:
        """(key, bytes, name, file) of a texture's image, or None (warned once):
        ``file`` is the base name of the file the picture is (see the module text)."""
        names = _file_names(tex)
        for v in self.videos_of(tex):
            data = _content(v)
            if data:
                return ("video", v.id), data, _short(v.name), _base_name(names + _file_names(v))
            names += [n for n in _file_names(v) if n not in names]
        for n in names:
            base = n.replace("\\", "/").rsplit("/", 1)[-1].lower()
            if base in self.content_by_name:
                v, data = self.content_by_name[base]
                return ("video", v.id), data, _short(v.name), _base_name([n])
        path = self.files.find(names)
        if path is not None:
            try:
                return ("file", str(path)), self.files.read(path, path.name), path.name, path.name
            except FormatError as e:     # refused (changed, not a file, over the limits)
                self.scene.warnings.append(f"texture {path.name!r}: {e.message}")
                return None
        shown = names[0] if names else tex.name
        if names and shown not in self.missing:
            self.missing.add(shown)
            self.scene.warnings.append(f"texture file {shown!r} not found beside the FBX "
                                       "or under data_root")
        return None

    def image(self, src: tuple, role: str = "") -> int | None:
        key, data, name, file = src
        if (key, role) in self.images:
            return self.images[(key, role)]
        if key[0] == "file" and not decodes_as_image(data):   # a named file that is no image
            self.scene.warnings.append(f"texture {name!r}: not an image; not embedded")
            self.images[(key, role)] = None
            return None
        extras = {"source_file": file} if file else {}
        if data[:8] == b"\x89PNG\r\n\x1a\n":
            im = Image(name=name, data=data, mime_type="image/png", extras=extras)
        elif data[:3] == b"\xff\xd8\xff":
            im = Image(name=name, data=data, mime_type="image/jpeg", extras=extras)
        else:
            try:
                im = Image.from_pil(_pil(data), name=name, extras=extras)
            except Exception:  # noqa: BLE001 - an undecodable texture is skipped
                self.scene.warnings.append(f"texture {name!r}: not an image Pillow can read")
                self.images[(key, role)] = None
                return None
        self.images[(key, role)] = self.scene.add_image(im)
        return self.images[(key, role)]

    def combined(self, key: tuple, name: str, make: Callable, files: dict) -> int | None:
        """A packed image made by ``make``; ``files``: its source file by channel."""
        if key in self.images:
            return self.images[key]
        try:
            pil = make()
        except Exception:  # noqa: BLE001 - an undecodable texture is skipped
            self.scene.warnings.append(f"texture {name!r}: not an image Pillow can read")
            pil = None
        files = {k: v for k, v in files.items() if v}
        self.images[key] = None if pil is None else self.scene.add_image(
            Image.from_pil(pil, name=name, extras={"source_files": files} if files else {}))
        return self.images[key]

    # -- the material --------------------------------------------------
    def material(self, mo: Any, color: tuple, opacity: float, emissive: np.ndarray) -> Material:
        slots: dict = {}
        transparency = False        # the opacity slot's map is a transparency map
        for tex, prop in self.textures_of(mo):
            slot = texture_slot(prop, self.blender)
            if slot == "normal" and prop.rsplit("|", 1)[-1].lower() in _BUMP_NAMES:
                slot = "bump"
            if slot is None or slot in slots:
                continue  # the first texture of a slot wins
            src = self.source(tex)
            if src is not None:
                slots[slot] = (tex, src)
                if slot == "opacity":     # (Blender writes its alpha map there: an opacity)
                    transparency = not self.blender and \
                        prop.rsplit("|", 1)[-1].lower() in _TRANSPARENCY_NAMES
        if "normal" not in slots and "bump" in slots:  # a true normal map beats a bump
            slots["normal"] = slots["bump"]
        mat = Material(name=mo.name, base_color=tuple(color) + (opacity,),
                       emissive=tuple(np.clip(emissive, 0, 1).tolist()),
                       alpha_mode="BLEND" if opacity < 0.999 else "OPAQUE")
        for attr, names in _PBR_SCALARS.items():
            name = next((n for n in names if n in mo.props), None)
            if name is not None:
                setattr(mat, attr, float(np.clip(mo.number(name, 0.0), 0, 1)))
        base, alpha = slots.get("base"), slots.get("opacity")
        if base is not None and alpha is None:
            mat.base_color_texture = self.ref(base[0], self.image(base[1]))
        elif alpha is not None:
            key = ("rgba", base[1][0] if base else None, alpha[1][0], transparency)
            idx = self.combined(key, (base[1][2] if base else "white") + "+alpha",
                                lambda: _with_alpha(base[1][1] if base else None, alpha[1][1],
                                                    transparency),
                                {"rgb": base[1][3] if base else None, "alpha": alpha[1][3]})
            mat.base_color_texture = self.ref((base or alpha)[0], idx)
            mat.alpha_mode = "BLEND"
        if mat.base_color_texture is not None:
            mat.base_color = (1.0, 1.0, 1.0, opacity)  # the texture replaces the colour
        if "normal" in slots:
            tex, src = slots["normal"]
            mat.normal_texture = self.ref(tex, self.image(src))
        if "occlusion" in slots:
            tex, src = slots["occlusion"]
            mat.occlusion_texture = self.ref(tex, self.image(src))
        if "emissive" in slots:
            tex, src = slots["emissive"]
            mat.emissive_texture = self.ref(tex, self.image(src))
            if not any(mat.emissive):
                mat.emissive = (1.0, 1.0, 1.0)
        metal, rough = slots.get("metallic"), slots.get("roughness")
        if metal is not None or rough is not None:
            # the Max glTF material's radio is 1 for glossiness (2: roughness);
            # the Physical material has a roughness_inv switch
            gloss = _first_number(mo.props.get("3dsMax|main|useGlossiness")) == 1 or \
                _truthy(mo.props.get("3dsMax|Parameters|roughness_inv"))
            key = ("mr", metal[1][0] if metal else None, rough[1][0] if rough else None, gloss)
            name = "+".join(s[1][2] for s in (metal, rough) if s) + "+metal_rough"
            idx = self.combined(key, name, lambda: _metal_rough(
                metal[1][1] if metal else None, rough[1][1] if rough else None, gloss,
                mat.metallic, mat.roughness),
                {"metallic": metal[1][3] if metal else None,
                 "roughness": rough[1][3] if rough else None})
            mat.metallic_roughness_texture = self.ref((metal or rough)[0], idx)
            if metal is not None:
                mat.metallic = 1.0
            if rough is not None:
                mat.roughness = 1.0
        return mat

    @staticmethod
    def ref(tex: Any, image: int | None) -> TextureRef | None:
        if image is None:
            return None
        ref = TextureRef(image=image)
        if _first_number(tex.props.get("WrapModeU")) == 1:
            ref.wrap_s = CLAMP_TO_EDGE
        if _first_number(tex.props.get("WrapModeV")) == 1:
            ref.wrap_t = CLAMP_TO_EDGE
        return ref


def _short(name: str) -> str:
    """A clip name without the folders some exporters put in it."""
    return name.replace("\\", "/").rsplit("/", 1)[-1] or name


def _base_name(names: list[str]) -> str | None:
    """The base name of the first of ``names`` that has one (either slash)."""
    for n in names:
        base = n.replace("\\", "/").rsplit("/", 1)[-1]
        if base:
            return base
    return None


def _truthy(values: Any) -> bool:
    return bool(_first_number(values))


def _first_number(values: Any) -> float | None:
    if not values:
        return None
    v = values[0]
    return float(v) if isinstance(v, (int, float)) else None


def _content(video: Any) -> bytes:
    content = video.child("Content")
    return b"".join(v for c, v in (content.props if content else []) if c == "R")


def _file_names(obj: Any) -> list[str]:
    """The file names an FBX Texture or Video carries, relative ones first."""
    out = []
    for child in (b"RelativeFilename", b"FileName", b"Filename"):
        node = obj.node.find(child)
        if node is not None and node.props and node.props[0][0] == "S":
            out.append(node.props[0][1])
    for prop in ("RelPath", "Path"):
        vals = obj.props.get(prop)
        if vals and isinstance(vals[0], bytes):
            out.append(vals[0])
    # a node-graph map (3ds Max OSL bitmap, shader graph) names its file in a
    # parameter: ``3dsMax|params|Filename``, ``...|filename``, ``...|sourceMap``
    for prop, vals in obj.props.items():
        last = str(prop).rsplit("|", 1)[-1].lower()
        if last in _FILE_PARAMETERS and vals and isinstance(vals[0], bytes) and vals[0]:
            out.append(vals[0])
    names = []
    for n in out:
        s = n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n)
        if s and s not in names:
            names.append(s)
    return names


#: map names whose picture is a transparency (white clear), not an opacity
_TRANSPARENCY_NAMES = frozenset({"transparentcolor", "transparencyfactor", "transparent",
                                 "transparency_map"})


def _with_alpha(rgb: bytes | None, alpha: bytes, transparency: bool = False):
    """An RGBA image: ``rgb``'s colour (white when None) and ``alpha``'s
    opacity as alpha, at the colour image's size.  An opacity map's opacity is
    its luminance (3ds Max: white is opaque).  A transparency map (FBX's
    ``TransparentColor``, as Maya and most game exporters write it) gives its
    alpha channel when it has one, the usual case of a diffuse picture with
    alpha connected to both slots, which Blender's importer reads the same way;
    without one its colour is transparency (Maya: white is clear), inverted."""
    picture = _pil(alpha)
    if not transparency:
        a = picture.convert("L")
    elif picture.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in picture.info:
        a = picture.convert("RGBA").getchannel("A")
    else:
        from PIL import ImageOps
        a = ImageOps.invert(picture.convert("L"))
    if rgb is None:
        from PIL import Image as PILImage
        base = PILImage.new("RGB", a.size, (255, 255, 255))
    else:
        base = _pil(rgb).convert("RGB")
    if a.size != base.size:
        a = a.resize(base.size)
    out = base.copy()
    out.putalpha(a)
    return out


def _metal_rough(metal: bytes | None, rough: bytes | None, gloss: bool,
                 metallic: float, roughness: float):
    """glTF's packed image: roughness in green, metallic in blue (red unused,
    white); a missing map is its scalar value."""
    from PIL import Image as PILImage
    m = _pil(metal).convert("L") if metal is not None else None
    r = _pil(rough).convert("L") if rough is not None else None
    size = max((x.size for x in (m, r) if x is not None), key=lambda s: s[0] * s[1])
    if r is not None and gloss:
        r = PILImage.eval(r, lambda v: 255 - v)

    def channel(img, value):
        if img is None:
            return PILImage.new("L", size, int(round(255 * min(max(value, 0.0), 1.0))))
        return img if img.size == size else img.resize(size)
    return PILImage.merge("RGB", (PILImage.new("L", size, 255), channel(r, roughness),
                                  channel(m, metallic)))
