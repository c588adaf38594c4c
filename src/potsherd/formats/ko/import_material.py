"""glTF materials as N3 material records and NTF textures (the import side of
:mod:`.scene_materials`): the diffuse is the base colour the engine modulates the
texture by, and the base colour image becomes a ``.dxt`` beside the model."""
from __future__ import annotations

import copy

import numpy as np

from ...document import Document
from ...scene import Scene
from ...scene.ops import base_color_picture
from .import_base import DEFAULT_MATERIAL
from .scene_materials import RF_ALPHA, RF_DOUBLE_SIDED, RF_NO_LIGHTING, n3_base_color
from .text import CP_DEFAULT


def material_record(scene: Scene, index: int | None, like: dict | None = None) -> dict:
    """An N3 material: the original's when given, else from the glTF material
    (its exported ``n3Material`` extras first).  The diffuse colour is the
    ``baseColorFactor``, which the engine modulates the texture by; exported
    extras keep their own diffuse while the factor is still the one the export
    derived from it (:func:`.scene_materials.n3_base_color`), so an edited colour wins."""
    if like is not None:
        return copy.deepcopy(like)
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
        textured = mat.base_color_texture is not None
        shown = n3_base_color(n3, textured, stage_from_file=False)
        if not np.allclose(np.asarray(mat.base_color, np.float64), shown, rtol=0, atol=1e-6):
            out["diffuse"] = [float(x) for x in mat.base_color[:3]] + [
                out["diffuse"][3] if textured else float(mat.base_color[3])]
        return out
    flags = 0
    if mat.alpha_mode == "BLEND":
        flags |= RF_ALPHA
    if mat.double_sided:
        flags |= RF_DOUBLE_SIDED
    if mat.unlit:
        flags |= RF_NO_LIGHTING
    out["renderFlags"] = flags
    out["diffuse"] = [float(x) for x in mat.base_color]
    return out


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
    from .textures_encode import encode_ntf
    rec = encode_ntf(pic, stem, encrypt=bool(options.get("encrypt")), warnings=scene.warnings)
    return f"{stem}.dxt", Document("dxt", rec, {}, b"", [], {"text_encoding": CP_DEFAULT})
