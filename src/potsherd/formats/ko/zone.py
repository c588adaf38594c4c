"""A Knight Online zone as one glTF scene: the ``.gtd`` terrain with its tile
textures, rivers and ponds, plus every object the zone's ``.opd`` places.

Axes follow the family rule for glTF: N3 (x, y, z) -> glTF (-x, y, z), with
every triangle's winding reversed (the N3 frame is left-handed).

Terrain (what the engine's terrain patches draw at full detail):

* height sample ``(x, z)`` is ``points[x * mapSize + z]`` at (4x, height, 4z) m;
* the tile between samples ``(x, z)`` and ``(x + 1, z + 1)`` takes the map data
  of its corner ``(x, z)``: texture ``tex1Idx`` (an index into the gtd's tile
  list, whose entries name a ``.gtt`` file and an NTF record in it), turned by
  ``tex1Dir`` (the engine's 8-entry corner table, mirrored variants included);
  ``tex2Idx`` is a second tile the engine adds on top (turned by ``tex2Dir``): the
  material of such a tile pair carries it as its emissive texture on TEXCOORD_1
  (glTF adds emissive light after shading; the engine adds before it);
* a tile is split along the diagonal from its (x, z) corner when x + z is
  even, along the other diagonal when it is odd;
* tiles without a valid ``tex1Idx`` or with ``isTileFull`` clear show the zone's
  colour map, a separate file the gtd does not name: they get a plain material.

``lod`` (the command line's ``--lod``) takes every 2**lod-th sample.  Rivers are
rows of 4 vertices joined by 6 triangles per row pair; ponds are ``columns``-wide
vertex grids; both are blended water meshes with their texture (looked up under
``misc/river/`` as the engine does) on the second UV set.

Objects: the ``.opd`` beside the ``.gtd`` (or option ``opd``).  Each placed shape
becomes a node.  Shapes with the same parts are one prototype: the first one is
built by :func:`.scene.add_shape` (so objects sit exactly as exported shapes
do), every further one is a node with its own transform whose part children
reuse the prototype's meshes (glTF mesh instancing).  The opd's collision
triangles are an optional mesh (``collision=1``) in an invisible material.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ... import resolve
from ...core.errors import FormatError
from ...core.limits import DEFAULT_LIMITS, Limits
from ...scene import Image, Material, Mesh, Primitive, Scene, TextureRef, flip_winding, weld
from ...scene.bake_colors import lit_colors
from ...scene.model import CLAMP_TO_EDGE
from ...scene.xform import mirror_x
from .text import text
from .scene import Materials, Resolver, _transform_trs, add_shape

TILE_SIZE = 4.0  # metres between height samples (the engine's TILE_SIZE)

#: corner (u, v) of a tile texture for each tex1Dir / tex2Dir value, in the
#: engine's corner order LT, RT, LB, RB (directions 4-7 are the mirrored ones)
TILE_DIR_U = np.array([[0, 1, 0, 1], [0, 0, 1, 1], [1, 0, 1, 0], [1, 1, 0, 0],
                       [1, 0, 1, 0], [0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 0, 0]], np.float32)
TILE_DIR_V = np.array([[0, 0, 1, 1], [1, 0, 1, 0], [1, 1, 0, 0], [0, 1, 0, 1],
                       [0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 0, 0], [1, 0, 1, 0]], np.float32)
#: our corner order LB, LT, RT, RB (samples (x,z), (x,z+1), (x+1,z+1), (x+1,z))
#: picked from the table's LT, RT, LB, RB columns
_CORNER_COLUMNS = [2, 0, 1, 3]
#: the two triangles of a tile, as the engine's 4-corner fans, for even and odd x + z
_EVEN_FAN = np.array([0, 1, 2, 0, 2, 3])
_ODD_FAN = np.array([1, 2, 3, 1, 3, 0])
#: a river strip between two rows of 4 vertices (the engine's fixed index pattern)
_RIVER_ROW = np.array([4, 0, 1, 4, 1, 5, 5, 1, 2, 5, 2, 6, 6, 2, 3, 6, 3, 7])
#: the colour-map tiles (texture not in the gtd): a neutral grass colour
COLOR_MAP_FALLBACK = (0.42, 0.47, 0.33, 1.0)
#: water whose texture is missing: a sea blue (the vertex colours keep their alpha)
WATER_FALLBACK = (0.25, 0.4, 0.55, 1.0)


def _flag(value: Any, default: bool) -> bool:
    """An option value as a bool (the command line may still pass text)."""
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "false", "no", "off", "")
    return bool(value)


def _finite_points(points: np.ndarray, what: str, scene: Scene) -> np.ndarray:
    """Coordinates with non-finite values drawn at 0 (warned): glTF accessors
    need finite bounds."""
    bad = ~np.isfinite(points)
    if bad.any():
        scene.warnings.append(f"{what}: {int(bad.any(axis=-1).sum())} non-finite points drawn at 0")
        points = np.where(bad, np.float32(0), points)
    return points


def _cstr(raw: Any) -> str:
    """A fixed 260-byte name field up to its NUL, as text."""
    return text(bytes(raw).split(b"\0", 1)[0])


# ----------------------------------------------------------------------------
# terrain


def _height_grid(doc: Any, scene: Scene) -> tuple[int, np.ndarray, np.ndarray]:
    """(mapSize, heights [x, z], map-data words [x, z])."""
    r = doc.root
    n = int(r["mapSize"])
    pts = r["points"]
    if n < 2 or len(pts) != n * n:
        raise FormatError(f"gtd mapSize {n}: a terrain needs at least 2 x 2 height samples",
                          path="gtd.mapSize", found=n)
    heights = np.asarray(pts["height"], np.float32).reshape(n, n)
    bad = ~np.isfinite(heights)
    if bad.any():
        scene.warnings.append(f"terrain: {int(bad.sum())} non-finite heights drawn at 0")
        heights = np.where(bad, np.float32(0), heights)
    words = np.asarray(pts["tile"], np.uint32).reshape(n, n)
    return n, heights, words


def _grid_normals(heights: np.ndarray, spacing: float) -> np.ndarray:
    """Per-sample normals of the height field, N3 axes (x, y, z)."""
    gx, gz = np.gradient(heights.astype(np.float64), spacing)
    nrm = np.stack([-gx, np.ones_like(gx), -gz], axis=-1)
    return nrm / np.linalg.norm(nrm, axis=-1, keepdims=True)


class TileImages:
    """Tile textures: entry ``t`` of the gtd's tile list -> a scene image (or None).

    A tile entry is (source, index): NTF record ``index`` of the ``.gtt`` file
    named by source name ``source``."""

    def __init__(self, doc: Any, scene: Scene, resolver: Resolver) -> None:
        ti = doc.root.get("tileInfo") or {}
        self.sources = [_cstr(s) for s in ti.get("sources", [])]
        tiles = ti.get("tiles")
        self.tiles = (np.zeros((0, 2), np.int64) if tiles is None or not len(tiles)
                      else np.stack([np.asarray(tiles["source"], np.int64),
                                     np.asarray(tiles["index"], np.int64)], axis=1))
        self.count = int(ti.get("tileCount", 0)) if len(self.tiles) else 0
        self.scene, self.resolver = scene, resolver
        self._gtt: dict[int, Any] = {}
        self._images: dict[int, int | None] = {}

    def describe(self, t: int) -> dict:
        """Where tile entry ``t`` comes from (material extras)."""
        src, idx = (int(x) for x in self.tiles[t])
        return {"tile": t, "tileSource": self.sources[src] if 0 <= src < len(self.sources) else "",
                "tileIndex": idx}

    def source_doc(self, src: int) -> Any:
        if src not in self._gtt:
            doc = None
            if 0 <= src < len(self.sources):
                doc = self.resolver.load(self.sources[src], self.scene, "tile texture")
                if doc is not None and doc.format != "gtt":
                    self.scene.warnings.append(f"tile texture {self.sources[src]!r} is a "
                                               f"{doc.format} file, not a .gtt")
                    doc = None
            else:
                self.scene.warnings.append(f"tile source {src} does not exist "
                                           f"({len(self.sources)} sources)")
            self._gtt[src] = doc
        return self._gtt[src]

    def image(self, t: int) -> int | None:
        if t in self._images:
            return self._images[t]
        self._images[t] = None
        src, idx = (int(x) for x in self.tiles[t])
        doc = self.source_doc(src)
        if doc is None:
            return None
        recs = doc.root["textures"]
        if not 0 <= idx < len(recs):
            self.scene.warnings.append(f"tile {t}: {self.sources[src]!r} has {len(recs)} "
                                       f"textures, no [{idx}]")
            return None
        from .textures import record_rgba
        from ...imaging.png import rgba_to_image
        try:
            rgba = record_rgba(recs[idx])
        except FormatError as e:
            self.scene.warnings.append(f"tile {t} ({self.sources[src]}[{idx}]): {e}")
            return None
        pic = rgba_to_image(rgba if (rgba[..., 3] != 255).any() else rgba[..., :3])
        name = f"{Path(self.sources[src].replace(chr(92), '/')).stem}_{idx}"
        self._images[t] = self.scene.add_image(Image.from_pil(pic, name=name))
        return self._images[t]


def terrain_mesh(doc: Any, scene: Scene, resolver: Resolver, lod: int = 0,
                 colour_map: tuple[int, str] | None = None) -> tuple[int, dict]:
    """The terrain as one mesh with a primitive per tile texture; (mesh, extras).
    ``colour_map``: (scene image, source name) of the zone's joined colour map
    (zone_colormap.py), drawn on the tiles without a tile texture."""
    n, heights, words = _height_grid(doc, scene)
    step = 1 << max(int(lod), 0)
    while step > 1 and (n - 1) // step < 1:
        step >>= 1
    cells = (n - 1) // step
    xs = np.arange(cells + 1) * step           # sample indices used along x and z
    normals = mirror_x(_grid_normals(heights, TILE_SIZE)).astype(np.float32)

    a, b = np.meshgrid(np.arange(cells), np.arange(cells), indexing="ij")
    a, b = a.ravel(), b.ravel()                # tile (a, b) of the coarse grid, x outer
    cx = np.stack([xs[a], xs[a], xs[a + 1], xs[a + 1]], axis=1)   # LB LT RT RB
    cz = np.stack([xs[b], xs[b + 1], xs[b + 1], xs[b]], axis=1)
    pos = np.stack([cx * TILE_SIZE, heights[cx, cz], cz * TILE_SIZE], axis=-1)
    pos = mirror_x(pos.reshape(-1, 3)).astype(np.float32)
    nrm = normals[cx, cz].reshape(-1, 3)
    grid_point = (cx * n + cz).reshape(-1)     # the height sample under each corner

    word = words[xs[a], xs[b]]
    full = (word & 1).astype(bool)
    dir1 = ((word >> 1) & 31).astype(np.int64)
    dir2 = ((word >> 6) & 31).astype(np.int64)
    tex1 = ((word >> 11) & 1023).astype(np.int64)
    tex2 = ((word >> 21) & 1023).astype(np.int64)
    odd_dirs = int(((dir1 > 7) | (dir2 > 7)).sum())
    if odd_dirs:
        scene.warnings.append(f"terrain: {odd_dirs} tiles with a direction above 7 drawn unturned")
    dir1 = np.where(dir1 > 7, 0, dir1)
    dir2 = np.where(dir2 > 7, 0, dir2)

    def corner_uvs(d: np.ndarray) -> np.ndarray:
        """Each direction turns or mirrors the unit square, an affine map of the
        grid position: shifting a tile's corners by its whole grid offset keeps
        the picture (the sampler repeats) and makes corners that neighbouring
        tiles of the same texture and direction share equal, so they weld."""
        u = TILE_DIR_U[d][:, _CORNER_COLUMNS]
        v = TILE_DIR_V[d][:, _CORNER_COLUMNS]
        u = u + ((u[:, 3] - u[:, 0]) * a + (u[:, 1] - u[:, 0]) * b)[:, None]
        v = v + ((v[:, 3] - v[:, 0]) * a + (v[:, 1] - v[:, 0]) * b)[:, None]
        return np.stack([u, v], axis=-1).reshape(-1, 2).astype(np.float32)

    uv, uv2 = corner_uvs(dir1), corner_uvs(dir2)
    tiles = TileImages(doc, scene, resolver)
    key = np.where(full & (tex1 < tiles.count), tex1, -1)
    # the engine adds tile tex2 on top of tex1 (both masked to black where the
    # other shows): glTF adds an emissive texture to the lit colour, the nearest
    # it has, so a tile pair is one material with tex2 as its emissive texture
    over = np.where((key >= 0) & (tex2 < tiles.count), tex2, -1)
    fans = np.where(((a + b) % 2 == 0)[:, None], _EVEN_FAN, _ODD_FAN)   # (Q, 6) corners

    prims: list[Primitive] = []
    missing: set = set()
    pairs, which = np.unique(np.stack([key, over], axis=1), axis=0, return_inverse=True)
    which = which.reshape(-1)
    for g, (t, t2) in enumerate(pairs.tolist()):
        quads = np.nonzero(which == g)[0]
        tri_corners = (quads[:, None] * 4 + fans[quads]).ravel()     # 6 corners per tile
        keys = [grid_point[tri_corners], dir1[tri_corners // 4]]
        if t2 >= 0:
            keys.append(dir2[tri_corners // 4])
        first, local = weld(*keys)
        corners = tri_corners[first]
        uvs = None
        if t < 0 and colour_map is not None:
            from .zone_colormap import colormap_uv
            mat = Material(name="colour map",
                           base_color_texture=TextureRef(image=colour_map[0], wrap_s=CLAMP_TO_EDGE,
                                                         wrap_t=CLAMP_TO_EDGE),
                           extras={"terrain": "colour map", "source": colour_map[1],
                                   "notApplied": "Misc\\Terrain_Base.bmp detail texture"})
            uvs = [colormap_uv(cx.reshape(-1)[corners], cz.reshape(-1)[corners], n)]
        elif t < 0:
            mat = Material(name="colour map", base_color=COLOR_MAP_FALLBACK,
                           extras={"terrain": "colour map (not stored in the .gtd)"})
        else:
            mat = Material(name=f"tile{t}" if t2 < 0 else f"tile{t}+{t2}",
                           extras=tiles.describe(t))
            img = tiles.image(t)
            if img is None:
                mat.base_color = COLOR_MAP_FALLBACK
                missing.add(t)
            else:
                mat.base_color_texture = TextureRef(image=img)
        if uvs is None:
            uvs = [uv[corners]]
        if t2 >= 0:
            mat.extras["overlay"] = tiles.describe(t2)
            img2 = tiles.image(t2)
            if img2 is None:
                missing.add(t2)
            else:
                mat.emissive_texture = TextureRef(image=img2, texcoord=1)
                mat.emissive = (1.0, 1.0, 1.0)
            uvs.append(uv2[corners])
        prims.append(Primitive(positions=pos[corners], normals=nrm[corners], uvs=uvs,
                               indices=flip_winding(local).astype(np.uint32),
                               material=scene.add_material(mat)))
    mesh = scene.add_mesh(Mesh(name="terrain", primitives=prims))
    textured = int(np.isin(key, [t for t in range(tiles.count) if tiles._images.get(t) is not None]).sum())
    extras = {"mapSize": n, "lod": int(lod), "sampleStep": step, "tileSize": TILE_SIZE,
              "tiles": int(len(key)), "texturedTiles": textured,
              "colourMapTiles": int((key < 0).sum()), "tileCount": tiles.count,
              "colourMap": colour_map[1] if colour_map is not None else None,
              "tileSources": tiles.sources}
    extras["overlaidTiles"] = int((over >= 0).sum())
    if missing:
        extras["untexturedTileEntries"] = sorted(missing)
    return mesh, extras


# ----------------------------------------------------------------------------
# water


def _argb_colors(bits: np.ndarray) -> np.ndarray:
    """D3D ARGB diffuse words as COLOR_0: D3D modulates the texture with them in
    display space, so RGB is sRGB-decoded (:func:`lit_colors`); alpha is kept."""
    b = bits.astype(np.uint32)
    return lit_colors(np.stack([(b >> 16) & 255, (b >> 8) & 255, b & 255, b >> 24],
                               axis=-1).astype(np.uint8))


def _water_material(scene: Scene, mats: Materials, texture: str, name: str) -> int:
    mat = Material(name=name, alpha_mode="BLEND", double_sided=True,
                   base_color=(1.0, 1.0, 1.0, 1.0), extras={"texture": texture})
    if texture:
        img = mats.image(f"misc\\river\\{texture}")
        if img is not None:
            mat.base_color_texture = TextureRef(image=img, texcoord=1)
    if mat.base_color_texture is None:
        mat.base_color = WATER_FALLBACK
    return scene.add_material(mat)


def _water_primitive(verts: np.ndarray, tri: np.ndarray, material: int, what: str,
                     scene: Scene) -> Primitive:
    v = np.asarray(verts, np.float32).reshape(-1, 11)
    bits = v.view(np.uint32)[:, 6]
    pos = _finite_points(mirror_x(v[:, 0:3]).astype(np.float32), what, scene)
    nrm = mirror_x(v[:, 3:6]).astype(np.float32)
    uvs = [np.nan_to_num(v[:, 7:9], nan=0.0, posinf=0.0, neginf=0.0),
           np.nan_to_num(v[:, 9:11], nan=0.0, posinf=0.0, neginf=0.0)]
    return Primitive(positions=pos, normals=np.where(np.isfinite(nrm), nrm, np.float32(0)),
                     colors=_argb_colors(bits), uvs=uvs,
                     indices=flip_winding(tri.reshape(-1)).astype(np.uint32), material=material)


def river_triangles(vertex_count: int, index_count: int) -> np.ndarray:
    """The engine's river index buffer: rows of 4 vertices, 18 indices per row pair."""
    rows = min(max(index_count, 0) // 18, max(vertex_count // 4 - 1, 0))
    return (_RIVER_ROW[None, :] + 4 * np.arange(rows)[:, None]).reshape(-1, 3)


def pond_triangles(vertex_count: int, columns: int, triangle_count: int) -> np.ndarray:
    """A ``columns``-wide vertex grid, two triangles per cell, at most
    ``triangle_count`` of them (the stored count is the engine's primitive count)."""
    if columns < 2 or vertex_count < 2 * columns:
        return np.zeros((0, 3), np.int64)
    rows = vertex_count // columns
    j, k = np.meshgrid(np.arange(rows - 1), np.arange(columns - 1), indexing="ij")
    x = (j * columns + k).ravel()
    y = x + columns
    tri = np.stack([np.stack([x, x + 1, y], 1), np.stack([y, x + 1, y + 1], 1)], 1).reshape(-1, 3)
    return tri[:max(triangle_count, 0)]


def add_water(doc: Any, scene: Scene, mats: Materials, parent: int) -> int:
    """Rivers and ponds as nodes under ``parent``; returns how many."""
    r = doc.root
    added = 0
    for kind, items in (("river", r.get("rivers") or []), ("pond", r.get("ponds") or [])):
        for i, w in enumerate(items):
            vc = int(w["vertexCount"])
            if vc <= 0:
                continue
            verts = np.asarray(w["vertices"], np.float32)
            if kind == "river":
                tri = river_triangles(vc, int(w["indexCount"]))
            else:
                tri = pond_triangles(vc, int(w["columns"]), int(w["indexCount"]))
            if not len(tri):
                scene.warnings.append(f"{kind} {i}: no triangles ({vc} vertices)")
                continue
            tex = text(w.get("texture")) if w.get("texture") is not None else ""
            mat = _water_material(scene, mats, tex, f"{kind}{i}")
            mesh = scene.add_mesh(Mesh(name=f"{kind}{i}", primitives=[
                _water_primitive(verts, tri, mat, f"{kind} {i}", scene)]))
            extras = {"kind": kind, "texture": tex, "indexCount": int(w["indexCount"])}
            if kind == "pond":
                extras["columns"] = int(w["columns"])
                if "waveVariance" in w:
                    extras["waveVariance"] = float(w["waveVariance"])
            scene.add_node(name=f"{kind}{i}", parent=parent, mesh=mesh, extras=extras)
            added += 1
    return added


# ----------------------------------------------------------------------------
# objects (.opd)


def _material_key(m: dict) -> tuple:
    return tuple((k, tuple(np.asarray(v, np.float64).ravel().tolist())) for k, v in sorted(m.items()))


def _prototype_key(obj: dict) -> tuple:
    """Objects with equal keys have the same parts (mesh, pivot, material, textures)."""
    return tuple((text(p["mesh"]).lower(), tuple(float(x) for x in p["pivot"]),
                  _material_key(p["material"]), tuple(text(t).lower() for t in p["textures"]),
                  float(p["textureFps"])) for p in obj["parts"])


def find_opd(gtd_path: str | None, listings: resolve.Listings | None = None) -> Path | None:
    """The ``.opd`` with the gtd's name in the gtd's folder (any case)."""
    if not gtd_path:
        return None
    return (listings or resolve.Listings()).sibling(gtd_path, ".opd")


def add_lightmap(doc: Any, scene: Scene, resolver: Resolver, root: int, src: str | None,
                 options: dict) -> int:
    """The zone's .tlt light map over the terrain (zone_lightmap.py): the file of
    ``--option lightmap=FILE``, else the .tlt of the gtd's name beside it
    (``lightmap=0``: none).  Returns the light-mapped tiles placed."""
    path = _side_file(resolver, src, options.get("lightmap"), ".tlt")
    if path is None:
        return 0
    from ... import registry
    from .zone_lightmap import lightmap_mesh
    try:
        tlt = registry.decode(resolver.read(path, path.name), path=str(path),
                              limits=resolver.limits)
    except (FormatError, OSError) as e:
        scene.warnings.append(f"light map: {path.name}: {e}")
        return 0
    if tlt.format != "tlt":
        scene.warnings.append(f"light map: {path.name} is a {tlt.format} file, not a .tlt")
        return 0
    _, heights, _ = _height_grid(doc, scene)
    mesh = lightmap_mesh(tlt, heights, TILE_SIZE, scene)
    if mesh is None:
        return 0
    tiles = int(scene.meshes[mesh].extras["lightmapTiles"])
    scene.add_node(name="lightmap", parent=root, mesh=mesh,
                   extras={"source": path.name, "tiles": tiles})
    return tiles


def load_colour_map(doc: Any, scene: Scene, resolver: Resolver, src: str | None,
                    options: dict) -> tuple[int, str] | None:
    """The zone's .tct colour map as one image (zone_colormap.py): the file of
    ``--option colormap=FILE``, else the .tct of the gtd's name beside it
    (``colormap=0``: none, the tiles keep a plain colour).  (image, name) or None."""
    path = _side_file(resolver, src, options.get("colormap"), ".tct")
    if path is None:
        return None
    from ... import registry
    from .zone_colormap import colormap_image
    try:
        tct = registry.decode(resolver.read(path, path.name), path=str(path),
                              limits=resolver.limits)
    except (FormatError, OSError) as e:
        scene.warnings.append(f"colour map: {path.name}: {e}")
        return None
    if tct.format != "tct":
        scene.warnings.append(f"colour map: {path.name} is a {tct.format} file, not a .tct")
        return None
    n = _height_grid(doc, scene)[0]
    img = colormap_image(tct, n, scene, f"{path.stem}_colormap")
    return None if img is None else (img, path.name)


def add_grass(doc: Any, scene: Scene, resolver: Resolver, root: int, options: dict) -> dict:
    """The gtd's grass as points under a node named ``grass`` (zone_grass.py);
    ``grass=0``: none.  The .grs that names the kinds' textures is
    ``misc\\grass\\<the gtd's grass name>.grs`` in the client tree, else the
    ``elmorad_start.grs`` the engine reads."""
    if not _flag(options.get("grass"), True):
        return {}
    from .zone_grass import grass_kinds, grass_mesh
    n, heights, _ = _height_grid(doc, scene)
    mask = np.frombuffer(bytes(doc.root.get("grass") or b""), np.uint8)
    if len(mask) != n * n or not mask.any():
        return {}
    grs = None
    name = _cstr(doc.root.get("zoneName"))
    refs = ([f"misc\\grass\\{name}.grs"] if name else []) + ["misc\\grass\\elmorad_start.grs"]
    found = next((r for r in refs if resolver.find(r) is not None), None)
    if found is None:
        scene.warnings.append(f"grass: {' / '.join(refs)} not found; kinds placed without "
                              "texture names")
    else:
        grs = resolver.load(found, scene, "grass file")
        if grs is not None and grs.format != "grs":
            scene.warnings.append(f"grass: {found} is a {grs.format} file, not a .grs")
            grs = None
    mesh, summary = grass_mesh(mask, heights, TILE_SIZE, grass_kinds(grs), scene)
    if mesh is not None:
        scene.add_node(name="grass", parent=root, mesh=mesh,
                       extras={**summary, "source": found or "",
                               "note": "5 boards a tile at fixed spots (the engine's are random)"})
    return summary


def _side_file(resolver: Resolver, src: str | None, given: Any, ext: str) -> Path | None:
    """A zone side file: the one an option names, none for 0/false, else the
    file of the gtd's name with ``ext`` beside it."""
    if given is not None and str(given).strip().lower() in ("0", "false", "no", "off"):
        return None
    if given and str(given).strip().lower() not in ("1", "true", "yes", "on"):
        return Path(str(given))
    return resolver.listings.sibling(src, ext) if src else None


def add_zone_lights(scene: Scene, resolver: Resolver, root: int, src: str | None,
                    options: dict) -> int:
    """The zone's .glo lights (KHR_lights_punctual, scene_lights.py) under one
    node: ``--option lights=FILE``, else the .glo of the gtd's name beside it
    (``lights=0``: none).  Returns the lights placed."""
    path = _side_file(resolver, src, options.get("lights"), ".glo")
    if path is None:
        return 0
    from ... import registry
    from .scene_lights import add_light
    try:
        glo = registry.decode(resolver.read(path, path.name), path=str(path),
                              limits=resolver.limits)
    except (FormatError, OSError) as e:
        scene.warnings.append(f"lights: {path.name}: {e}")
        return 0
    if glo.format != "glo":
        scene.warnings.append(f"lights: {path.name} is a {glo.format} file, not a .glo")
        return 0
    node = scene.add_node(name="lights", parent=root, extras={"source": path.name})
    for rec in glo.root["lights"]:
        add_light(scene, rec, node)
    return len(glo.root["lights"])


def load_opd(path: Path, scene: Scene, limits: Limits | None = None,
             confinement: resolve.Confinement | None = None) -> Any:
    """The decoded ``.opd`` at ``path``: read as named (an option), or through
    ``confinement`` (the one found beside the gtd)."""
    from ... import registry
    limits = limits or DEFAULT_LIMITS
    try:
        data = confinement.read(path, path.name) if confinement is not None else \
            resolve.read_bounded(path, limits)
        doc = registry.decode(data, path=str(path), limits=limits)
    except (FormatError, OSError) as e:
        scene.warnings.append(f"objects: {path.name}: {e}")
        return None
    if doc.format != "opd":
        scene.warnings.append(f"objects: {path.name} is a {doc.format} file, not an .opd")
        return None
    if doc.params.get("opaque"):
        scene.warnings.append(f"objects: {path.name} has an unknown layout (kept opaque); "
                              "no objects placed")
        return None
    return doc


def add_objects(opd: Any, scene: Scene, resolver: Resolver, mats: Materials,
                parent: int) -> dict:
    """Every placed shape as a node under a group node below ``parent``."""
    # shapes from add_shape and this terrain share one axis rule (scene/xform.mirror_x)
    group = scene.add_node(name="objects", parent=parent)
    protos: dict[tuple, list[int]] = {}
    stats = {"objects": 0, "prototypes": 0, "parts": 0, "partsWithMesh": 0, "objectsWithMesh": 0}
    for n, obj in enumerate(opd.root["objects"]):
        t = obj["transform"]
        info = {"opdIndex": n, "shapeType": int(obj["shapeType"]),
                "metadata": [int(x) for x in obj["metadata"]]}
        animated = any(int(k["count"]) > 0 for k in t["keys"])
        key = None if animated else _prototype_key(obj)
        if key is None or key not in protos:
            root = add_shape(scene, resolver, mats, obj, parent=group)
            scene.nodes[root].extras.update(info)
            if key is not None:
                protos[key] = list(scene.nodes[root].children)
                stats["prototypes"] += 1
            kids = scene.nodes[root].children
        else:
            root = scene.add_node(name=text(t["name"]) or "shape", parent=group,
                                  **_transform_trs(t),
                                  extras={"keys": [int(k["count"]) for k in t["keys"]], **info})
            for c in protos[key]:
                part = scene.nodes[c]
                scene.add_node(name=part.name, parent=root, translation=part.translation,
                               mesh=part.mesh)  # the part's extras stay on the prototype
            kids = scene.nodes[root].children
        with_mesh = sum(1 for c in kids if scene.nodes[c].mesh is not None)
        stats["objects"] += 1
        stats["parts"] += len(kids)
        stats["partsWithMesh"] += with_mesh
        stats["objectsWithMesh"] += bool(with_mesh)
    return stats


def collision_mesh(opd: Any, scene: Scene) -> int | None:
    """The opd's collision triangles as one mesh (invisible material)."""
    tri = np.asarray(opd.root["triangles"], np.float32).reshape(-1, 3)
    if not len(tri):
        return None
    mat = scene.add_material(Material(name="collision", base_color=(1.0, 0.0, 1.0, 0.0),
                                      alpha_mode="BLEND", double_sided=True, unlit=True,
                                      extras={"hidden": True}))
    idx = flip_winding(np.arange(len(tri))).astype(np.uint32)
    return scene.add_mesh(Mesh(name="collision", primitives=[
        Primitive(positions=_finite_points(mirror_x(tri).astype(np.float32), "collision", scene),
                  indices=idx, material=mat)]))


# ----------------------------------------------------------------------------
# the zone


def scene_zone(doc: Any, **options: Any) -> Scene:
    """The ``.gtd`` document (plus its ``.opd``) as one scene."""
    if doc.params.get("opaque"):
        raise NotImplementedError("the gtd's layout is unknown (kept opaque)")
    src = options.get("source_path") or doc.source
    scene = Scene(name=os.path.basename(src) if src else "zone")
    resolver = Resolver(src, options.get("data_root"), limits=doc.limits,
                        given=(options.get("opd"), options.get("lightmap"),
                               options.get("lights"), options.get("colormap")))
    mats = Materials(scene, resolver)
    try:
        lod = max(int(options.get("lod") or 0), 0)
    except (TypeError, ValueError):
        lod = 0
    name = _cstr(doc.root["zoneName"]) or (text(doc.root.get("name")) if "name" in doc.root else "")
    root = scene.add_node(name=name or "zone")

    mesh, extras = terrain_mesh(doc, scene, resolver, lod,
                                load_colour_map(doc, scene, resolver, src, options))
    scene.add_node(name="terrain", parent=root, mesh=mesh, extras=extras)
    summary: dict = {"terrain": {k: extras[k] for k in ("mapSize", "tiles", "texturedTiles",
                                                          "colourMapTiles")}}
    summary["terrain"]["colourMap"] = extras.get("colourMap")
    summary["water"] = add_water(doc, scene, mats, root)
    lightmaps = doc.root.get("lightmaps") or []
    if lightmaps:  # every real gtd stores none, and newer engines refuse them
        scene.warnings.append(f"terrain: {len(lightmaps)} lightmaps not exported")
    summary["lightmapTiles"] = add_lightmap(doc, scene, resolver, root, src, options)
    summary["lights"] = add_zone_lights(scene, resolver, root, src, options)
    grass = add_grass(doc, scene, resolver, root, options)
    if grass:
        summary["grass"] = grass

    want_objects = _flag(options.get("objects"), True)
    want_collision = _flag(options.get("collision"), False)
    opd_doc = None
    if want_objects or want_collision:
        given = options.get("opd")
        path = Path(given) if given else find_opd(src, resolver.listings)
        if path is None:
            scene.warnings.append("objects: no .opd beside the .gtd (give one with --option opd=FILE)")
        elif not path.is_file():
            scene.warnings.append(f"objects: {path} not found")
        else:
            opd_doc = load_opd(path, scene, resolver.limits,
                               None if given else resolver.confinement)
    if opd_doc is not None and want_objects:
        stats = add_objects(opd_doc, scene, resolver, mats, root)
        summary["objects"] = stats
        if stats["objects"] and stats["partsWithMesh"] < stats["parts"]:
            scene.warnings.insert(0, f"objects: {stats['objects']} placed, "
                                     f"{stats['parts'] - stats['partsWithMesh']} of "
                                     f"{stats['parts']} parts without their mesh (named below)")
    if opd_doc is not None and want_collision:
        cm = collision_mesh(opd_doc, scene)
        if cm is not None:
            scene.add_node(name="collision", parent=root, mesh=cm,
                           extras={"hidden": True, "triangles": int(len(opd_doc.root["triangles"]))})
            summary["collisionTriangles"] = int(len(opd_doc.root["triangles"]))
    scene.nodes[root].extras["zone"] = summary
    scene.warnings[:] = list(dict.fromkeys(scene.warnings))
    return scene
