"""A zone's light map (``.tlt``) on its terrain, as the engine draws it.

CN3TerrainPatch draws each light-mapped tile a second time: a quad over the
tile's four height samples with the tile's light-map texture, alpha-blended
(SRCALPHA / INVSRCALPHA) over the terrain, its texture coordinates inset by one
texel (``1/S`` to ``(S-1)/S`` for an S-texel map).  The export does the same:
one mesh of those quads, the tile textures packed into one atlas image, in a
BLEND material without lighting, lifted a few centimetres so that viewers do
not z-fight it with the terrain (the engine draws it at equal depth).

A patch's tiles are numbered inside the patch (``x``, ``z``); the patch is the
offset table's entry ``px + pz * patchCount``; a patch holds
``(mapSize - 1) / patchCount`` tiles a side.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...scene import Image, Material, Mesh, Primitive, Scene, TextureRef, flip_winding
from ...scene.xform import mirror_x

LIFT = 0.02   # metres above the terrain


def lightmap_tiles(tlt: Any, map_size: int, scene: Scene) -> list[tuple[int, int, np.ndarray]]:
    """(tile x, tile z, RGBA texels) of every light-mapped tile."""
    from .textures import record_rgba
    from ...core.errors import FormatError
    r = tlt.root
    side = int(tlt.params.get("patchCount", 0))
    if side <= 0 or (map_size - 1) % side:
        scene.warnings.append(f"light map: {side} patches a side do not divide the terrain's "
                              f"{map_size - 1} tiles; not applied")
        return []
    per_patch = (map_size - 1) // side
    offsets = np.asarray(r["offsets"], np.int64)
    order = np.argsort(offsets, kind="stable")
    order = order[offsets[order] > 0]              # file order = ascending offsets
    out = []
    bad = 0
    for patch, index in zip(r["patches"], order.tolist()):
        px, pz = index % side, index // side
        for t in patch["tiles"]:
            x, z = int(t["x"]), int(t["z"])
            if not (0 <= x < per_patch and 0 <= z < per_patch):
                bad += 1
                continue
            try:
                rgba = record_rgba(t["texture"])
            except FormatError:
                bad += 1
                continue
            out.append((px * per_patch + x, pz * per_patch + z, rgba))
    if bad:
        scene.warnings.append(f"light map: {bad} tiles outside their patch or undecodable; "
                              "left out")
    return out


MAX_ATLAS = 4096   # pixels a side: the texture size every GPU takes


def lightmap_mesh(tlt: Any, heights: np.ndarray, tile_size: float, scene: Scene) -> int | None:
    """The light-map overlay as one mesh (index into ``scene.meshes``), or None:
    one primitive per atlas of at most MAX_ATLAS pixels a side."""
    n = heights.shape[0]
    tiles = lightmap_tiles(tlt, n, scene)
    if not tiles:
        return None
    s = max(max(t[2].shape[0], t[2].shape[1]) for t in tiles)
    per_atlas = max(MAX_ATLAS // s, 1) ** 2
    prims = [_atlas_primitive(tiles[i:i + per_atlas], s, heights, tile_size, scene, i // per_atlas)
             for i in range(0, len(tiles), per_atlas)]
    mesh = scene.add_mesh(Mesh(name="lightmap", primitives=prims))
    scene.meshes[mesh].extras["lightmapTiles"] = len(tiles)
    return mesh


def _atlas_primitive(tiles: list, s: int, heights: np.ndarray, tile_size: float, scene: Scene,
                     number: int) -> Primitive:
    from PIL import Image as PILImage
    cols = int(np.ceil(np.sqrt(len(tiles))))
    rows = int(np.ceil(len(tiles) / cols))
    atlas = np.zeros((rows * s, cols * s, 4), np.uint8)
    tx = np.array([t[0] for t in tiles])
    tz = np.array([t[1] for t in tiles])
    for k, (_, _, rgba) in enumerate(tiles):
        r0, c0 = (k // cols) * s, (k % cols) * s
        atlas[r0:r0 + rgba.shape[0], c0:c0 + rgba.shape[1]] = rgba
    sizes = np.array([t[2].shape[1] for t in tiles], np.float64)
    lo, hi = 1.0 / sizes, (sizes - 1.0) / sizes         # the engine's one-texel inset
    # corners in the engine's order: (x, z) (x, z+1) (x+1, z+1) (x+1, z)
    cx = np.stack([tx, tx, tx + 1, tx + 1], axis=1)
    cz = np.stack([tz, tz + 1, tz + 1, tz], axis=1)
    pos = np.stack([cx * tile_size, heights[cx, cz] + LIFT, cz * tile_size], axis=-1)
    u = np.stack([lo, lo, hi, hi], axis=1)
    v = np.stack([hi, lo, lo, hi], axis=1)
    k = np.arange(len(tiles))
    u = ((k % cols)[:, None] + u) * s / (cols * s)
    v = ((k // cols)[:, None] + v) * s / (rows * s)
    fan = np.array([0, 1, 2, 0, 2, 3])
    idx = (k[:, None] * 4 + fan).reshape(-1)
    img = scene.add_image(Image.from_pil(PILImage.fromarray(atlas, "RGBA"),
                                         name=f"lightmap{number}"))
    mat = scene.add_material(Material(name=f"lightmap{number}",
                                      base_color_texture=TextureRef(image=img),
                                      alpha_mode="BLEND", unlit=True,
                                      extras={"lightmapTiles": len(tiles), "lift": LIFT}))
    return Primitive(positions=mirror_x(pos.reshape(-1, 3)).astype(np.float32),
                     uvs=[np.stack([u, v], axis=-1).reshape(-1, 2).astype(np.float32)],
                     indices=flip_winding(idx).astype(np.uint32), material=mat)
