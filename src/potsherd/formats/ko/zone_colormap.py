"""A zone's colour map (``.tct``) on its terrain, as the engine draws it.

CN3Terrain::LoadColorMap reads ``n * n`` NTF textures, x outer and z inner,
``n = patches * PATCH_PIXEL_SIZE / COLORMAPTEX_SIZE`` (patches of 8 tiles, 32
colour-map pixels a patch, 128-pixel textures: one texture spans UNITUV = 32
tiles a side).  A tile without a full tile texture (``tex1Idx`` past the tile
list or ``isTileFull`` clear) shows texture ``(tx // 32, tz // 32)`` with
``u = (tx % 32) / 32`` growing with x and ``v = 1 - (tz % 32) / 32`` falling
with z (CN3TerrainPatch).  The export joins the textures into one image, each
flipped so that image rows follow z, and gives the colour-map tiles the UVs
``(x, z) / (32 n)`` of their height samples.

Not reproduced: the engine multiplies these tiles by ``Misc\\Terrain_Base.bmp``
(a detail texture) and the vertex colour; the material names the base texture
in its extras instead.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...scene import Image, Scene

PATCH_TILE_SIZE = 8       # tiles a patch side (N3TerrainDef.h)
PATCH_PIXEL_SIZE = 32     # colour-map pixels a patch side
COLORMAPTEX_SIZE = 128    # pixels a colour-map texture side
UNITUV = 32               # tiles a colour-map texture side
MAX_SIDE = 4096           # pixels a side of the joined image (every GPU takes it)


def colormap_count(map_size: int) -> int:
    """Textures a side of the colour map of a terrain of ``map_size`` samples."""
    patches = max(map_size - 1, 0) // PATCH_TILE_SIZE
    return patches * PATCH_PIXEL_SIZE // COLORMAPTEX_SIZE


def colormap_rgba(tct: Any, map_size: int, scene: Scene) -> np.ndarray | None:
    """The joined colour map (rows follow z, columns x; RGBA), or None with a
    warning when the file does not fit the terrain."""
    from .textures import record_rgba
    from ...core.errors import FormatError
    n = colormap_count(map_size)
    recs = tct.root["textures"]
    if n == 0 or len(recs) != n * n:
        scene.warnings.append(f"colour map: {len(recs)} textures, the terrain of {map_size} "
                              f"samples takes {n} x {n}; not applied")
        return None
    tiles = []
    bad = 0
    side = None
    for rec in recs:
        try:
            rgba = record_rgba(rec)
        except FormatError:
            rgba = None
        if rgba is not None and side is None:
            side = rgba.shape[0]
        if rgba is None or rgba.shape[:2] != (side, side):
            bad += 1
            rgba = None
        tiles.append(rgba)
    if side is None:
        scene.warnings.append("colour map: no texture decodes; not applied")
        return None
    if bad:
        scene.warnings.append(f"colour map: {bad} textures undecodable or of another size; "
                              "drawn black")
    stack = np.zeros((n * n, side, side, 4), np.uint8)
    for k, t in enumerate(tiles):
        if t is not None:
            stack[k] = t
    # [cx][cz] textures, each flipped so its rows run with z, then rows = (cz, row)
    # and columns = (cx, column)
    grid = stack.reshape(n, n, side, side, 4)[:, :, ::-1]
    out = grid.transpose(1, 2, 0, 3, 4).reshape(n * side, n * side, 4)
    f = 1
    while n * side // f > MAX_SIDE:
        f *= 2
    if f > 1:
        m = n * side // f
        out = out[:m * f, :m * f].reshape(m, f, m, f, 4).mean(axis=(1, 3)).round().astype(np.uint8)
        scene.warnings.append(f"colour map: {n * side} pixels a side averaged down to {m} "
                              f"(the {MAX_SIDE}-pixel limit)")
    return np.ascontiguousarray(out)


def colormap_image(tct: Any, map_size: int, scene: Scene, name: str) -> int | None:
    """The joined colour map as a scene image (index), or None."""
    from PIL import Image as PILImage
    rgba = colormap_rgba(tct, map_size, scene)
    if rgba is None:
        return None
    pic = PILImage.fromarray(rgba if (rgba[..., 3] != 255).any() else rgba[..., :3])
    return scene.add_image(Image.from_pil(pic, name=name))


def colormap_uv(cx: np.ndarray, cz: np.ndarray, map_size: int) -> np.ndarray:
    """UVs of height samples ``(cx, cz)`` in the joined colour map."""
    span = float(UNITUV * colormap_count(map_size))
    return np.stack([cx / span, cz / span], axis=-1).astype(np.float32)
