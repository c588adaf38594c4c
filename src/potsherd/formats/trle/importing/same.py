"""Whether an imported mesh says what the original one says, so that the original's
record is kept (an unedited round trip gives back its bytes): the same polygons, or
the same triangles whatever their order, and per position the same shades or normal
directions."""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..scene import corner_pixels


def polygon_set(mesh: dict) -> list:
    v = np.asarray(mesh["vertices"]).reshape(-1, 3).tolist()
    return sorted((int(p["shape"]), tuple(tuple(v[int(i)]) for i in p["vertices"]),
                   int(p["texture"]), int(p["attributes"])) for p in mesh["polygons"])


def same_mesh(mesh: dict, like_mesh: dict) -> bool:
    """True when an imported mesh is the original one in another vertex and
    polygon order (same polygons with textures and attributes; per position the
    same shades, or the same normal directions, a zero original normal matching
    any): the original is then kept as it was, unused vertices included."""
    try:
        return polygon_set(mesh) == polygon_set(like_mesh) and same_attributes(mesh, like_mesh)
    except (KeyError, IndexError, ValueError, TypeError):
        return False


def _srgb_byte(shade: Any) -> np.ndarray:
    """A shade as the 8-bit sRGB colour value a tool storing sRGB bytes holds
    (not rounded): the export's COLOR_0 is the shade's display brightness
    sRGB-decoded, so its sRGB encoding is that brightness again."""
    return np.clip((8191.0 - np.asarray(shade, np.float64)) / 8191.0, 0.0, 1.0) * 255.0


def same_attributes(mesh: dict, like_mesh: dict, byte_colours: bool = False) -> bool:
    """Per vertex position of the original's polygons, the imported mesh has the
    same shades (both shaded), or normals within 0.8 degrees (a zero original
    normal matching any); and no other positions.

    ``byte_colours``: the glTF's colours went through a tool that stores them as
    8-bit sRGB, so a shade matches within that byte's step.  When they do not
    match per position, they may still be the original's on other corners:
    Blender 3.4's exporter gives each corner of its CORNER-domain colours the
    colour of the corner whose number is the vertex's, mixing in the white of
    the unshaded parts of the same primitive.  Where a vertex's colour is can
    then not be told, and the shades are the original's when every one is an
    original shade of the mesh (or that white)."""
    try:
        nn, ln = int(mesh["normal_count"]), int(like_mesh["normal_count"])
        if (nn < 0) != (ln < 0):
            return False
        if nn < 0 and byte_colours:
            if _same_per_position(mesh, like_mesh, byte_colours):
                return True
            mine = _srgb_byte(np.unique(np.asarray(mesh["shades"])))
            theirs = _srgb_byte(np.unique(np.concatenate([np.asarray(like_mesh["shades"]), [0]])))
            if len(mine) and np.abs(mine[:, None] - theirs[None]).min(1).max() > 0.75:
                return False
            mesh = {**mesh, "shades": np.zeros(len(mesh["shades"]), np.int64)}
            like_mesh = {**like_mesh, "shades": np.zeros(len(like_mesh["shades"]), np.int64)}
        return _same_per_position(mesh, like_mesh, False)
    except (KeyError, IndexError, ValueError, TypeError):
        return False


def _same_per_position(mesh: dict, like_mesh: dict, byte_colours: bool) -> bool:
    try:
        nn, ln = int(mesh["normal_count"]), int(like_mesh["normal_count"])

        def per_position(m: dict, used_only: bool) -> dict:
            v = np.asarray(m["vertices"]).reshape(-1, 3).tolist()
            used = {int(i) for p in m["polygons"] for i in p["vertices"]}
            attr = np.asarray(m["shades"] if int(m["normal_count"]) < 0 else
                              m.get("normals", np.zeros((len(v), 3))), np.float64)
            out: dict = {}
            for k, p in enumerate(v):
                if used_only and k not in used or k >= len(attr):
                    continue
                out.setdefault(tuple(p), []).append(attr[k])
            return out
        mine, theirs = per_position(mesh, False), per_position(like_mesh, True)
        if set(mine) != set(theirs):
            return False
        for pos, values in theirs.items():
            for t in values:
                if nn < 0:
                    if not any(m == t or byte_colours and
                               abs(_srgb_byte(m) - _srgb_byte(t)) <= 0.75 for m in mine[pos]):
                        return False
                    continue
                lt = np.linalg.norm(t)
                if lt == 0 or ln == 0:
                    continue
                if not any(np.dot(m, t) / max(np.linalg.norm(m) * lt, 1e-12) > 1 - 1e-4
                           for m in mine[pos]):
                    return False
        return True
    except (KeyError, IndexError, ValueError, TypeError):
        return False


def _canonical(corners: list) -> tuple:
    """A triangle's corners from its smallest one on (the winding kept)."""
    k = min(range(3), key=lambda i: corners[i])
    return tuple(corners[k:] + corners[:k])


def same_triangles(positions: list, pixels: list, attributes: list, like_mesh: dict,
                   rects: list) -> bool:
    """Whether the imported triangles (TR clockwise: per triangle its corners'
    integer positions, atlas pixels (None where a UV is not on a whole pixel) and
    its polygon attributes) are the original mesh's triangles, a quad being its
    corners 0-1-2 and 0-2-3 as the export splits it: the same set, in any order
    and from any first corner, vertices split or merged as may be.  ``rects``:
    the atlas rectangle of each of the moveable's textures."""
    try:
        polys = like_mesh["polygons"]
        verts = np.asarray(like_mesh["vertices"]).reshape(-1, 3).tolist()
        if len(positions) != sum(2 if int(p["shape"]) == 9 else 1 for p in polys):
            return False
        mine: Counter = Counter()
        for pos, px, attr in zip(positions, pixels, attributes):
            if px is None:
                return False
            mine[(_canonical([(*map(int, p), *map(int, u)) for p, u in zip(pos, px)]),
                  int(attr))] += 1
        corner_px, bad = corner_pixels(polys, rects) if polys else (np.zeros((0, 4, 2)), [])
        if np.any(bad):
            return False
        theirs: Counter = Counter()
        for p, px in zip(polys, corner_px.astype(np.int64).tolist()):
            ids = [int(i) for i in p["vertices"]]
            corners = [(*verts[i], *px[c]) for c, i in enumerate(ids)]
            for tri in ((0, 1, 2), (0, 2, 3)) if int(p["shape"]) == 9 else ((0, 1, 2),):
                theirs[(_canonical([corners[c] for c in tri]), int(p["attributes"]) & 0xFF)] += 1
        return mine == theirs
    except (KeyError, IndexError, ValueError, TypeError):
        return False


def pixel_corners(uv: Any, size: tuple) -> list | None:
    """A triangle's UVs as whole atlas pixels (None when one is not)."""
    px = np.asarray(uv, np.float64) * [size[0], size[1]]
    r = np.round(px)
    if np.abs(px - r).max() > 1e-3:
        return None
    return r.astype(np.int64).tolist()
