"""Several glTF materials on one N3 part or plug: one texture atlas.

A ``.n3cpart`` or ``.n3cplug`` has one material and one texture, while a
Blender model often has several: a blade and a grip, a face and a helmet.
Giving every triangle the first material's texture paints the grip with the
blade's texels. Instead, each material's base colour becomes one cell of a new
texture, and its triangles' UVs are moved into that cell:

* A textured material gives its image, with ``baseColorFactor`` multiplied in
  linear light. If its UVs run past 0..1 (tiling), the cell repeats the image
  over the whole tiles they cover (shrunk to fit one cell), up to ``MAX_TILES`` a
  side. Beyond that the UVs are clamped, with a warning. Every picture is read
  at most the size a cell can get, so memory stays near one atlas.
* An untextured material gives a 4x4 block of its colour, and its UVs go to
  the block's centre.
* Cells are packed in shelves, with a 4-pixel edge-replicated gutter (one DXT
  block, so a cell whose sides are multiples of 4 starts on a block) so that
  filtering and mipmaps do not bleed between cells. The atlas sides are powers
  of two, at most ``MAX_SIDE``; cells are halved (less their gutters) until they fit.

The atlas material takes the first material's alpha mode and lighting, and is
double-sided when any of them is; a warning names the merged materials. ``.n3chr`` does not need
this, because it makes one part per material.
"""
from __future__ import annotations

import io
import math

import numpy as np

from ....scene import Image, Material, Scene, TextureRef
from ....scene.ops import base_color_picture
from .base import ImportError_

MAX_TILES = 8
MAX_SIDE = 2048
GUTTER = 4
SOLID = 4


def _srgb_to_linear(c: np.ndarray) -> np.ndarray:
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _linear_to_srgb(c: np.ndarray) -> np.ndarray:
    return np.where(c <= 0.0031308, c * 12.92, 1.055 * np.power(np.maximum(c, 0), 1 / 2.4) - 0.055)


def _picture(scene: Scene, mat: Material | None, limit: int,
             decoded: dict | None = None) -> np.ndarray | None:
    """The material's base colour texture as RGBA floats (factor applied), at
    most ``limit`` pixels a side, or None when it has no readable embedded image.
    ``decoded`` keeps each image's pixels (before the factor) for the next
    material naming it: a thousand materials of one big image decode it once."""
    ref = mat.base_color_texture if mat is not None else None
    key = (ref.image, limit) if ref is not None else None
    if decoded is not None and key in decoded:
        rgba = decoded[key]
    else:
        rgba = _image_pixels(scene, mat, limit)
        if decoded is not None and key is not None:
            decoded[key] = rgba
    if rgba is None:     # (none, or unreadable: the atlas cell is the colour)
        return None
    factor = np.asarray(mat.base_color, np.float64) if mat is not None else np.ones(4)
    if np.any(factor != 1.0):
        rgba = rgba.copy()          # (the decoded pixels stay for the next material)
        rgba[..., :3] = _linear_to_srgb(_srgb_to_linear(rgba[..., :3]) * factor[:3])
        rgba[..., 3] *= factor[3]
    return np.clip(rgba, 0.0, 1.0)


def _image_pixels(scene: Scene, mat: Material | None, limit: int) -> np.ndarray | None:
    pic = base_color_picture(scene, mat)[1]
    if pic is None:
        return None
    from PIL import Image as PILImage
    if max(pic.size) > limit:       # (memory stays near one atlas, whatever the images)
        pic = pic.convert("RGBA")
        pic.thumbnail((limit, limit), PILImage.LANCZOS)
    return np.asarray(pic.convert("RGBA"), np.float32) / np.float32(255.0)   # (float32: a 2048-pixel atlas stays 64 MB)


def _solid(mat: Material | None) -> np.ndarray:
    """A block of the material's colour as texels: glTF's factor is linear light,
    a texture's RGB sRGB-encoded (alpha stays linear)."""
    colour = np.clip(np.asarray(mat.base_color if mat is not None else (1.0, 1.0, 1.0, 1.0),
                                np.float64), 0, 1)
    colour[:3] = _linear_to_srgb(colour[:3])
    return np.broadcast_to(colour, (SOLID, SOLID, 4)).copy()


def _corner_uvs(sets: list) -> np.ndarray:
    out = [np.asarray(s.uvs[0], np.float64)[np.asarray(s.indices, np.int64).reshape(-1)]
           for s in sets if s.uvs and len(s.indices)]
    return np.concatenate(out) if out else np.zeros((0, 2))


def _shelves(sizes: list, width: int) -> tuple[list, int]:
    """Top-left corners of boxes ``sizes`` [(w, h)] in rows of ``width``, tallest
    first; and the height used."""
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i][1], i))
    at = [(0, 0)] * len(sizes)
    x = y = row = 0
    for i in order:
        w, h = sizes[i]
        if x and x + w > width:
            x, y, row = 0, y + row, 0
        at[i] = (x, y)
        x += w
        row = max(row, h)
    return at, y + row


def _resized(pic: np.ndarray, scale: int) -> np.ndarray:
    """``pic`` at 1/``scale`` of its size less the two gutters."""
    h, w = pic.shape[:2]
    return _resized_to(pic, (max(SOLID, w // scale - 2 * GUTTER), max(SOLID, h // scale - 2 * GUTTER)))


def _resized_to(pic: np.ndarray, size: tuple) -> np.ndarray:
    """``pic`` resampled (Lanczos) to ``size`` (width, height)."""
    from PIL import Image as PILImage
    im = PILImage.fromarray(np.round(pic * 255).astype(np.uint8), "RGBA")
    return np.asarray(im.resize(size, PILImage.LANCZOS), np.float32) / np.float32(255.0)


def _pack(cells: list) -> tuple:
    """(cell pictures, their corners, atlas width, height used): the cells at
    full size if they fit ``MAX_SIDE``, else each less its gutters (so a
    power-of-two texture with its gutter fills a power-of-two slot: two 1024s
    side by side in 2048), else halved until they fit.  For each size, the
    power-of-two width giving the smallest atlas wins."""
    attempts = [(1, False)] + [(1 << k, True) for k in range(0, 12)]
    for scale, shrink in attempts:
        pics = [c[1] if not shrink or not c[4] else _resized(c[1], scale) for c in cells]
        sizes = [(p.shape[1] + 2 * GUTTER, p.shape[0] + 2 * GUTTER) for p in pics]
        widest = max(w for w, _ in sizes)
        best = None
        width = _pow2(widest)
        while width <= MAX_SIDE:
            at, used = _shelves(sizes, width)
            if used <= MAX_SIDE and (best is None or width * _pow2(used) < best[2] * _pow2(best[3])):
                best = (pics, at, width, used)
            width *= 2
        if best is not None:
            return best
    raise ImportError_(f"{len(cells)} materials do not fit one {MAX_SIDE}x{MAX_SIDE} texture atlas")


def _pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 1).bit_length()


def merge_materials(scene: Scene, sets: list, what: str) -> list:
    """``sets`` (``scene.ops.TriangleSet``) with one material: unchanged when they
    already share one, else re-pointed at a new atlas material and image, with
    their UVs moved into its cells (new arrays; the scene's primitives stay)."""
    distinct = list(dict.fromkeys(s.material for s in sets))
    if len(distinct) <= 1:
        return sets
    cells = []     # (material, picture, uv low, uv high, textured)
    # each picture (tiles included) at most the side an atlas cell can get
    limit = max(64, MAX_SIDE // math.ceil(math.sqrt(len(distinct))))
    decoded: dict = {}
    for m in distinct:
        mat = scene.materials[m] if m is not None and 0 <= m < len(scene.materials) else None
        members = [s for s in sets if s.material == m]
        pic = _picture(scene, mat, limit, decoded)
        if pic is None:
            cells.append((m, _solid(mat), np.zeros(2), np.ones(2), False))
            continue
        uv = _corner_uvs(members)
        uv = uv[np.isfinite(uv).all(axis=1)]     # (non-finite UVs: gather refuses them by name)
        lo = np.floor(uv.min(axis=0)) if len(uv) else np.zeros(2)
        hi = np.ceil(uv.max(axis=0)) if len(uv) else np.ones(2)
        hi = np.maximum(hi, lo + 1)
        span = hi - lo
        if not np.isfinite(span).all() or span.max() > MAX_TILES:
            scene.warnings.append(f"{what}: material {mat.name or m} tiles its texture "
                                  f"{span[0]:g}x{span[1]:g} times; UVs clamped to one tile in the atlas")
            lo, hi = np.zeros(2), np.ones(2)
        tiles = (hi - lo).astype(int)
        if tiles.max() > 1:
            per_tile = (max(SOLID, min(pic.shape[1], limit // tiles[0])),
                        max(SOLID, min(pic.shape[0], limit // tiles[1])))
            if per_tile != (pic.shape[1], pic.shape[0]):
                pic = _resized_to(pic, per_tile)
            pic = np.tile(pic, (tiles[1], tiles[0], 1))
        cells.append((m, pic, lo, hi, True))
    pics, at, width, used = _pack(cells)
    height = _pow2(used)
    atlas = np.zeros((height, width, 4), np.float32)
    placed = {}
    for (m, _, lo, hi, textured), pic, (x, y) in zip(cells, pics, at):
        h, w = pic.shape[:2]
        atlas[y:y + h + 2 * GUTTER, x:x + w + 2 * GUTTER] = np.pad(
            pic, ((GUTTER, GUTTER), (GUTTER, GUTTER), (0, 0)), mode="edge")
        # the cell's inner rectangle in atlas UV (0..1, top-left origin like glTF)
        placed[m] = (np.array([(x + GUTTER) / width, (y + GUTTER) / height]),
                     np.array([w / width, h / height]), lo, hi, textured)
    from PIL import Image as PILImage
    buf = io.BytesIO()
    PILImage.fromarray(np.round(atlas * 255).astype(np.uint8), "RGBA").save(buf, "PNG")
    image = scene.add_image(Image(name=f"{what}_atlas", data=buf.getvalue(), mime_type="image/png"))
    first = next((scene.materials[m] for m in distinct
                  if m is not None and 0 <= m < len(scene.materials)), None)
    names = [(scene.materials[m].name or f"material {m}")
             if m is not None and 0 <= m < len(scene.materials) else "no material" for m in distinct]
    atlas_mat = Material(name="+".join(names)[:60],
                         base_color=(1.0, 1.0, 1.0, 1.0),
                         base_color_texture=TextureRef(image=image),
                         alpha_mode=first.alpha_mode if first else "OPAQUE",
                         alpha_cutoff=first.alpha_cutoff if first else 0.5,
                         double_sided=any(scene.materials[m].double_sided for m in distinct
                                          if m is not None and 0 <= m < len(scene.materials)),
                         unlit=first.unlit if first else False,
                         extras=dict(first.extras) if first else {})
    index = scene.add_material(atlas_mat)
    out = []
    for s in sets:
        origin, size, lo, hi, textured = placed[s.material]
        n = len(s.positions)
        if textured and s.uvs:
            raw = np.asarray(s.uvs[0], np.float64)
            uv = origin + (np.clip(raw, lo, hi) - lo) / (hi - lo) * size
            uv = np.where(np.isfinite(raw), uv, raw)     # (kept non-finite: refused later)
        else:
            uv = np.broadcast_to(origin + size / 2, (n, 2))
        s.uvs = [uv.astype(np.float32)] + list(s.uvs[1:])
        s.material = index
        out.append(s)
    scene.warnings.append(f"{what}: {len(distinct)} materials ({', '.join(names)}) "
                          f"merged into one {width}x{height} texture atlas (a part has one texture)")
    return out
