"""glTF materials as N3 material records and NTF textures (the import side of
:mod:`.scene_materials`): the diffuse is the base colour the engine modulates the
texture by, and the base colour image becomes a ``.dxt`` beside the model."""
from __future__ import annotations

import copy
import io
import os
from typing import Any

import numpy as np

from ....core.errors import FormatError
from ....document import Document
from ....scene import Scene
from ....scene.bake_colors import linear_to_srgb
from ....scene.ops import base_color_picture
from .base import DEFAULT_MATERIAL
from ..scene_materials import RF_ALPHA, RF_DOUBLE_SIDED, RF_NO_LIGHTING, n3_base_color
from ..text import CP_DEFAULT, text


def material_record(scene: Scene, index: int | None, like: dict | None = None, *,
                    stage_from_file: bool = False) -> dict:
    """An N3 material: the original's when given, else from the glTF material
    (its exported ``n3Material`` extras first).  The diffuse colour is the
    ``baseColorFactor`` sRGB-encoded (the engine modulates the texture by it in
    display space, glTF's factor is linear light); exported
    extras keep their own diffuse while the factor is still the one the export
    derived from it (:func:`.scene_materials.n3_base_color`), so an edited colour wins."""
    if like is not None:
        out = copy.deepcopy(like)
        if index is not None and 0 <= index < len(scene.materials):
            # a colour changed against what the original exports to is the new diffuse
            _edited_diffuse(out, scene.materials[index], like, stage_from_file)
        return out
    out = copy.deepcopy(DEFAULT_MATERIAL)
    if index is None or not 0 <= index < len(scene.materials):
        return out
    mat = scene.materials[index]
    n3 = mat.extras.get("n3Material") if mat.extras else None
    if isinstance(n3, dict):
        for k in out:
            v = n3.get(k)
            if isinstance(out[k], list) and isinstance(v, list) and len(v) == len(out[k]):
                out[k] = [float(x) if x is not None else 0.0 for x in v]
            elif isinstance(v, (int, float)):
                out[k] = type(out[k])(v)
        _edited_diffuse(out, mat, n3)
        return out
    flags = 0
    if mat.alpha_mode == "BLEND":
        flags |= RF_ALPHA
    if mat.double_sided:
        flags |= RF_DOUBLE_SIDED
    if mat.unlit:
        flags |= RF_NO_LIGHTING
    out["renderFlags"] = flags
    out["diffuse"] = _display(mat.base_color[:3]) + [float(mat.base_color[3])]
    return out


def _display(factor: Any) -> list:
    """A linear ``baseColorFactor`` RGB as the display-space diffuse D3D
    multiplies by (the inverse of the export's decoding)."""
    return [float(x) for x in linear_to_srgb(np.asarray(factor, np.float64))]


def _edited_diffuse(out: dict, mat: Any, n3: dict, stage_from_file: bool = False) -> None:
    """Set ``out``'s diffuse to ``mat``'s base colour when that is not the colour
    the N3 record ``n3`` exports to (a textured part keeps its diffuse alpha;
    ``stage_from_file``: a shape's part, which follows its own texture stage)."""
    textured = mat.base_color_texture is not None
    shown = n3_base_color(n3, textured, stage_from_file=stage_from_file)
    if not np.allclose(np.asarray(mat.base_color, np.float64), shown, rtol=0, atol=1e-6):
        out["diffuse"] = _display(mat.base_color[:3]) + [
            float(out["diffuse"][3]) if textured else float(mat.base_color[3])]


def edited_texture(scene: Scene, material: int | None, like: Document, ref: Any,
                   options: dict) -> tuple[str, Document] | None:
    """The material's image as a new ``.dxt`` named as the original's texture
    ``ref``, when its pixels are not the original's (repainted); None when they
    are, or when either cannot be read (the reference is then kept as it was)."""
    if material is None or not 0 <= material < len(scene.materials) or not text(ref):
        return None
    img, pic, _ = base_color_picture(scene, scene.materials[material])
    if pic is None:
        return None
    from ....scene import Scene as _Sink
    from ..resolver import Resolver
    try:
        doc = Resolver(like.source, None, limits=like.limits).load(ref, _Sink(), "texture")
        pics = doc.codec.textures(doc) if doc is not None and doc.codec.textures else None
    except FormatError:
        pics = None
    if not pics:
        return None
    old = pics[0][1]
    if isinstance(old, (bytes, bytearray)):
        from PIL import Image
        try:
            old = Image.open(io.BytesIO(bytes(old)))
        except Exception:  # noqa: BLE001 - an undecodable original: nothing to compare
            return None
    a, b = np.asarray(pic.convert("RGBA")), np.asarray(old.convert("RGBA"))
    if a.shape == b.shape and np.array_equal(a, b):
        return None
    name = os.path.basename(text(ref).replace("\\", "/"))
    from ..textures_encode import encode_ntf
    rec = encode_ntf(pic, os.path.splitext(name)[0], encrypt=bool(options.get("encrypt")),
                     warnings=scene.warnings, lossless=bool(img.extras.get("baked")))
    scene.warnings.append(f"texture {text(ref)!r} repainted in the glTF: written as {name}")
    return name, Document("dxt", rec, {}, b"", [], {"text_encoding": CP_DEFAULT})


def texture_file(scene: Scene, material: int | None, stem: str,
                 options: dict) -> tuple[str, Document] | None:
    """The material's base colour image as an NTF .dxt document, or None."""
    if material is None or not 0 <= material < len(scene.materials):
        return None
    img, pic, problem = base_color_picture(scene, scene.materials[material])
    if img is None:
        return None
    if pic is None:
        scene.warnings.append(f"texture {img.name or img.uri!r}: not embedded; not converted"
                              if img.data is None else
                              f"texture {img.name!r}: cannot be read ({problem}); not converted")
        return None
    from ..textures_encode import encode_ntf
    # (a bake of vertex colours is kept lossless: block compression spoils its gradients)
    rec = encode_ntf(pic, stem, encrypt=bool(options.get("encrypt")), warnings=scene.warnings,
                     lossless=bool(img.extras.get("baked")))
    return f"{stem}.dxt", Document("dxt", rec, {}, b"", [], {"text_encoding": CP_DEFAULT})
