"""Knight Online materials and textures as glTF materials: the N3 material
record (D3D9 ``D3DMATERIAL9`` plus render flags and the texture stage) and the
texture files it names, decoded once per batch (:data:`_TEXTURE_IMAGES`)."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from ... import resolve
from ...core.errors import FormatError
from ...scene import Image, Material, Scene, TextureRef
from ...scene.bake_colors import srgb_to_linear
from .text import text

RF_ALPHA, RF_DOUBLE_SIDED, RF_BILLBOARD, RF_NO_LIGHTING = 0x1, 0x4, 0x8, 0x40


# D3DTEXTUREOP and D3DTA values of a material's texture stage (d3d9types.h)
D3DTOP_MODULATE, D3DTOP_MODULATE2X, D3DTOP_MODULATE4X = 4, 5, 6
D3DTA_DIFFUSE, D3DTA_CURRENT = 0, 1


def n3_base_color(n3: dict, textured: bool, stage_from_file: bool) -> tuple[float, ...]:
    """The glTF ``baseColorFactor`` an N3 material shows as: its diffuse colour.

    The engine draws a part with lighting on the material, so an untextured part
    is its diffuse colour and a textured one is the texture modulated by it
    (``CN3CPart::Render``: MODULATE of TEXTURE and DIFFUSE).  Shapes take the
    stage from the file instead (``CN3SPart::Render``); a texture stage that does
    not modulate by the diffuse shows the texture alone (factor 1).  Textured
    alpha is the texture's (D3D's default alpha stage), so the factor's is 1.
    D3D's fixed function multiplies in display space and glTF's factor is linear
    light, so the RGB is sRGB-decoded (a 0.5 diffuse halves the texel as shown:
    factor 0.214).  Non-finite values count as 1, values are clamped to [0, 1]."""
    d = [1.0 if v is None else min(max(float(v), 0.0), 1.0)
         for v in (list(n3.get("diffuse") or []) + [1.0] * 4)[:4]]
    if not textured:
        return _linear(d[:3]) + (d[3],)
    scale = 1.0
    if stage_from_file:
        op, a1, a2 = n3.get("colorOp"), n3.get("colorArg1"), n3.get("colorArg2")
        if op not in (D3DTOP_MODULATE, D3DTOP_MODULATE2X, D3DTOP_MODULATE4X) or not (
                {a1, a2} & {D3DTA_DIFFUSE, D3DTA_CURRENT}):
            return (1.0, 1.0, 1.0, 1.0)
        scale = float(1 << (op - D3DTOP_MODULATE))
    return _linear([min(v * scale, 1.0) for v in d[:3]]) + (1.0,)


def _linear(display: list) -> tuple[float, ...]:
    return tuple(float(x) for x in srgb_to_linear(np.asarray(display, np.float64)))


def _finite(values: Any) -> list:
    """JSON-safe floats for extras (non-finite values become None)."""
    return [float(v) if np.isfinite(v) else None for v in np.asarray(values, np.float64).ravel()]


#: texture images already decoded and PNG-encoded, by (path, mtime_ns, size): a
#: folder conversion uses one .dxt for many parts, and PNG encoding was half of
#: converting them when each scene encoded it again.  Bounded by its bytes
#: (oldest dropped first); an edited file has a new stamp, so it is read again.
_TEXTURE_IMAGES: dict[tuple, Image] = {}
TEXTURE_CACHE_BYTES = 256 << 20


def _file_stamp(path: Path | None) -> tuple | None:
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (os.path.realpath(path), st.st_mtime_ns, st.st_size)


def _remember_texture(stamp: tuple, image: Image) -> None:
    size = len(image.data or b"")
    if size > TEXTURE_CACHE_BYTES:
        return
    _TEXTURE_IMAGES[stamp] = image
    total = sum(len(i.data or b"") for i in _TEXTURE_IMAGES.values())
    while total > TEXTURE_CACHE_BYTES:
        oldest = next(iter(_TEXTURE_IMAGES))
        total -= len(_TEXTURE_IMAGES.pop(oldest).data or b"")


class Materials:
    """Scene materials from N3 ``material`` records plus texture files."""

    def __init__(self, scene: Scene, resolver: resolve.Resolver) -> None:
        self.scene = scene
        self.resolver = resolver
        self.images: dict[str, int | None] = {}
        self.cache: dict[tuple, int] = {}

    def image(self, ref: Any) -> int | None:
        key = text(ref).lower()
        if key in self.images:
            return self.images[key]
        self.images[key] = None
        path = self.resolver.find(ref) if text(ref) else None
        stamp = _file_stamp(path)
        cached = _TEXTURE_IMAGES.get(stamp) if stamp is not None else None
        if cached is not None:  # decoded and PNG-encoded by an earlier scene of this batch
            self.images[key] = self.scene.add_image(dataclasses.replace(
                cached, extras=dict(cached.extras)))
            return self.images[key]
        doc = self.resolver.load(ref, self.scene, "texture")
        if doc is None or doc.codec.textures is None:
            return None
        try:
            pics = doc.codec.textures(doc)
        except FormatError as e:
            self.scene.warnings.append(f"texture {text(ref)}: {e}")
            return None
        if not pics:
            self.scene.warnings.extend(doc.warnings[-1:])
            return None
        name, pic = pics[0]
        img = pic if isinstance(pic, bytes) else None
        image = Image(name=name, data=img) if img is not None else Image.from_pil(pic, name=name)
        if stamp is not None and stamp == _file_stamp(path):  # unchanged while decoding
            _remember_texture(stamp, dataclasses.replace(image, extras=dict(image.extras)))
        self.images[key] = self.scene.add_image(image)
        return self.images[key]

    def get(self, mat: dict | None, texture: Any, name: str, stage_from_file: bool = False) -> int:
        """The scene material of an N3 material record and texture name;
        ``stage_from_file`` for shapes, whose texture stage is the record's."""
        key = (id(mat), text(texture).lower(), stage_from_file)
        if key in self.cache:
            return self.cache[key]
        out = Material(name=name)
        if mat is not None:
            flags = int(mat["renderFlags"])
            src, dst = int(mat["sourceBlend"]), int(mat["destinationBlend"])
            # a Y billboard always turns its face to the camera in game; glTF has no
            # billboards, so it is shown from both sides (its authored side is arbitrary)
            out.double_sided = bool(flags & (RF_DOUBLE_SIDED | RF_BILLBOARD))
            if flags & RF_BILLBOARD:
                out.extras["billboard"] = True
            out.unlit = bool(flags & RF_NO_LIGHTING)
            if flags & RF_ALPHA:
                out.alpha_mode = "BLEND"
            out.extras["n3Material"] = {
                "diffuse": _finite(mat["diffuse"]), "ambient": _finite(mat["ambient"]),
                "specular": _finite(mat["specular"]), "emissive": _finite(mat["emissive"]),
                "power": _finite([mat["power"]])[0], "colorOp": int(mat["colorOp"]),
                "colorArg1": int(mat["colorArg1"]), "colorArg2": int(mat["colorArg2"]),
                "renderFlags": flags, "sourceBlend": src, "destinationBlend": dst}
            if flags & RF_ALPHA and (src, dst) == (2, 2):
                out.extras["additive"] = True  # D3DBLEND_ONE, ONE: glTF has no additive mode
        if text(texture):
            out.extras["texture"] = text(texture)
            img = self.image(texture)
            if img is not None:
                out.base_color_texture = TextureRef(image=img)
        if mat is not None:
            out.base_color = n3_base_color(out.extras["n3Material"],
                                           out.base_color_texture is not None, stage_from_file)
        self.cache[key] = self.scene.add_material(out)
        return self.cache[key]
