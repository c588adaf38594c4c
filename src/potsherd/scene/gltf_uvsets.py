"""UV sets for the glTF reader: the base colour texture's
``KHR_texture_transform`` baked into the UVs it reads, and that UV set moved to
the front, because every game format keeps one UV set without a transform.  A
mixin of :class:`~.gltf_read._Reader`, on the checked access of :mod:`.gltf_access`."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core.errors import FormatError
from .gltf_access import GltfAccess
from .model import Scene


class UvSets(GltfAccess):
    """Texture transforms and UV set order of a read scene's primitives."""

    def apply_uv_transforms(self, scene: Scene) -> None:
        """KHR_texture_transform of each material's base colour texture, baked
        into the UV set it reads in every primitive using that material.  A
        game format has one UV set and no transform, and a Blender mapping node
        exports as this extension.  Other slots' transforms cannot share those UVs
        and are only reported."""
        baked: dict[int, tuple] = {}     # material -> (2x3 matrix, UV set)
        for mi, m in enumerate(scene.materials):
            for attr in ("base_color_texture", "normal_texture", "emissive_texture",
                         "occlusion_texture", "metallic_roughness_texture"):
                ref = getattr(m, attr, None)
                where = ref.extras.pop("_transform_path", None) if ref is not None else None
                if where is None:
                    continue
                if attr != "base_color_texture":
                    self.warnings.append(f"{where}: not applied to the UVs (only the base "
                                         "colour texture's transform is)")
                    continue
                tt = ref.extras["KHR_texture_transform"]
                matrix, texcoord = self.uv_transform(tt, where, ref.texcoord)
                if matrix is not None:
                    ref.texcoord = texcoord
                    baked[mi] = (matrix, texcoord)
        if not baked:
            return
        for mesh in scene.meshes:
            for prim in mesh.primitives:
                matrix, texcoord = baked.get(prim.material, (None, 0))
                if matrix is not None and texcoord < len(prim.uvs):
                    uv = np.asarray(prim.uvs[texcoord], np.float64)
                    prim.uvs[texcoord] = (uv @ matrix[:, :2].T + matrix[:, 2]).astype(np.float32)

    def base_colour_uv_first(self, scene: Scene) -> None:
        """The UV set a material's base colour texture reads (``texCoord: k``)
        made set 0 of every primitive using that material, the other sets after
        it in their order, so importers that keep only ``uvs[0]`` (every game
        format here) sample the texture with its own UVs.  The material's texture
        references are renumbered to match (base colour 0); each reordered
        primitive records the source set of each new set in
        ``extras["uvSetOrder"]`` and the base colour reference its
        ``extras["sourceTexCoord"]``."""
        moved: dict[int, int] = {}       # material -> UV set moved to the front
        for mi, m in enumerate(scene.materials):
            ref = m.base_color_texture
            if ref is None or not ref.texcoord:
                continue
            k = int(ref.texcoord)
            moved[mi] = k
            for attr in ("base_color_texture", "normal_texture", "emissive_texture",
                         "occlusion_texture", "metallic_roughness_texture"):
                other = getattr(m, attr, None)
                if other is not None:
                    t = int(other.texcoord)
                    other.texcoord = 0 if t == k else t + 1 if t < k else t
            ref.extras.setdefault("sourceTexCoord", k)
        if not moved:
            return
        for mesh_i, mesh in enumerate(scene.meshes):
            for pi, prim in enumerate(mesh.primitives):
                k = moved.get(prim.material)
                if k is None:
                    continue
                if k >= len(prim.uvs):
                    self.warnings.append(
                        f"$.meshes[{mesh_i}].primitives[{pi}]: its material's base colour "
                        f"texture reads TEXCOORD_{k}, which the primitive does not have")
                    continue
                order = [k] + [j for j in range(len(prim.uvs)) if j != k]
                prim.uvs = [prim.uvs[j] for j in order]
                prim.extras.setdefault("uvSetOrder", order)

    def uv_transform(self, tt: Any, where: str, texcoord: int) -> tuple:
        """(2x3 matrix, UV set) of a KHR_texture_transform: ``T · R · S`` as the
        extension defines it; (None, texcoord) with a warning when malformed."""
        if not isinstance(tt, dict):
            self.warnings.append(f"{where}: not an object; ignored")
            return None, texcoord
        try:
            ox, oy = self.numbers(tt, "offset", where, 2, [0.0, 0.0])
            sx, sy = self.numbers(tt, "scale", where, 2, [1.0, 1.0])
            r = float(self.get(tt, "rotation", where, "number", 0.0))
            k = self.get(tt, "texCoord", where, "integer", texcoord)
        except FormatError as e:
            self.warnings.append(f"{e.message}; KHR_texture_transform ignored")
            return None, texcoord
        if k < 0 or not all(np.isfinite([ox, oy, sx, sy, r])):
            self.warnings.append(f"{where}: out of range; ignored")
            return None, texcoord
        c, s_ = np.cos(r), np.sin(r)
        return np.array([[c * sx, s_ * sy, ox], [-s_ * sx, c * sy, oy]]), int(k)
