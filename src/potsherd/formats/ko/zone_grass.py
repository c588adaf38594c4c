"""A zone's grass, placed where the engine grows it, as glTF points.

The ``.gtd`` stores one grass byte per height sample (``grass[x * mapSize +
z]``, CN3Terrain::GetGrassAttr): a bit mask of the grass kinds growing in the
tile whose corner that sample is.  The engine plants ``m_pGrassNum`` = 5 boards
per tile (a constant: the loader fills it with 5), at random spots of the
4 m tile, their kinds cycling through the mask's set bits in bit order
(CGrassBoard::SetInfo / FindGrassIndex).  A kind's texture is the ``.grs``
entry whose id is that bit (``misc\\grass\\<texture>``, CN3Terrain::LoadGrassInfo,
which reads ``misc\\grass\\elmorad_start.grs`` whatever the gtd names; the file
the gtd names is taken first when it exists).

The spots are random in the engine; the export uses five fixed spots per tile
(the centre and the four quarter points) so that the output is reproducible,
each at the height of the terrain's triangle under it.  One POINTS primitive per
kind, its material naming the texture in its extras.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...scene import Material, Mesh, Primitive, Scene
from ...scene.xform import mirror_x

BOARDS_PER_TILE = 5
#: the fixed spots in a tile, in tile units (x, z)
SPOTS = np.array([[0.5, 0.5], [0.25, 0.25], [0.75, 0.25], [0.25, 0.75], [0.75, 0.75]])
GRASS_COLOUR = (0.35, 0.55, 0.2, 1.0)


def grass_kinds(grs: Any | None) -> dict[int, str]:
    """Bit index -> texture path of the .grs entries (ids that are single bits)."""
    out: dict[int, str] = {}
    if grs is None:
        return out
    for rec in grs.root["grasses"]:
        gid = int(rec["id"])
        if gid > 0 and gid & (gid - 1) == 0 and gid < 256:
            name = bytes(rec["texture"]).split(b"\0", 1)[0].decode("cp949", "replace")
            out[gid.bit_length() - 1] = "misc\\grass\\" + name
    return out


def _surface_height(heights: np.ndarray, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Height at (x, z) in sample units on the terrain's triangles (split along the
    (x, z)-(x+1, z+1) diagonal when x + z is even, the other one when odd)."""
    n = heights.shape[0]
    ix = np.clip(np.floor(x).astype(np.int64), 0, n - 2)
    iz = np.clip(np.floor(z).astype(np.int64), 0, n - 2)
    fx, fz = x - ix, z - iz
    h00, h01 = heights[ix, iz], heights[ix, iz + 1]
    h10, h11 = heights[ix + 1, iz], heights[ix + 1, iz + 1]
    even = (ix + iz) % 2 == 0
    # even: triangles (00, 01, 11) and (00, 11, 10); odd: (01, 11, 10) and (01, 10, 00)
    e = np.where(fz >= fx, h00 + fz * (h01 - h00) + fx * (h11 - h01),
                 h00 + fx * (h10 - h00) + fz * (h11 - h10))
    o = np.where(fx + fz <= 1, h00 + fx * (h10 - h00) + fz * (h01 - h00),
                 h11 + (1 - fx) * (h01 - h11) + (1 - fz) * (h10 - h11))
    return np.where(even, e, o)


def grass_mesh(mask: np.ndarray, heights: np.ndarray, tile_size: float, kinds: dict[int, str],
               scene: Scene) -> tuple[int | None, dict]:
    """The grass points as one mesh (index or None) and a summary."""
    n = heights.shape[0]
    m = np.asarray(mask, np.uint8).reshape(n, n)[:n - 1, :n - 1]
    tx, tz = np.nonzero(m)
    if not len(tx):
        return None, {"tiles": 0, "points": 0}
    bits = (m[tx, tz][:, None] >> np.arange(8)) & 1                    # (T, 8)
    counts = bits.sum(axis=1)
    # the board k of a tile takes the (k mod count)-th set bit, in bit order
    order = np.argsort(-bits, axis=1, kind="stable")                    # set bits first
    k = np.arange(BOARDS_PER_TILE)
    kind = np.take_along_axis(order, k[None, :] % counts[:, None], axis=1)   # (T, 5)
    px = tx[:, None] + SPOTS[None, :, 0]
    pz = tz[:, None] + SPOTS[None, :, 1]
    py = _surface_height(heights, px.ravel(), pz.ravel()).reshape(px.shape)
    pos = np.stack([px * tile_size, py, pz * tile_size], axis=-1).reshape(-1, 3)
    pos = mirror_x(pos).astype(np.float32)
    kind = kind.ravel()
    prims = []
    missing = []
    for b in np.unique(kind).tolist():
        sel = np.flatnonzero(kind == b)
        tex = kinds.get(b)
        if tex is None:
            missing.append(1 << b)
        mat = scene.add_material(Material(name=f"grass{b}", base_color=GRASS_COLOUR,
                                          unlit=True,
                                          extras={"grassId": 1 << b, "texture": tex or ""}))
        prims.append(Primitive(positions=pos[sel], indices=None, material=mat, mode=0))
    if missing:
        scene.warnings.append(f"grass: kinds {missing} not in the .grs; placed without a texture name")
    mesh = scene.add_mesh(Mesh(name="grass", primitives=prims))
    return mesh, {"tiles": int(len(tx)), "points": int(len(kind)),
                  "kinds": sorted(int(1 << b) for b in np.unique(kind).tolist())}
