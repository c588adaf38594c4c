"""A bone mesh's TR polygons from its clockwise triangles: pairs sharing a
diagonal become quads when the texture corners (potsherd's atlas) or the plane
(others) allow it; each polygon's texture is the atlas rectangle it spans or a
baked block.  Candidate pairs and, without an atlas, the quad tests and the
baking are array operations; only the greedy pairing, first triangle first,
walks the triangles one by one."""
from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np

from .. import model
from ..polytable import PolygonColumns
from .textures import _Textures, material_codes

# corner ids 0 nw, 1 ne, 2 se, 3 sw of the texture rectangle, per TR polygon corner
_QUAD = {(0, 1, 2, 3): 0, (1, 0, 3, 2): 0x8000}
_TRI = {(0, 1, 3): 0x0000, (1, 0, 2): 0x8000, (1, 2, 0): 0x2000, (0, 3, 1): 0xA000,
        (2, 3, 1): 0x4000, (3, 2, 0): 0xC000, (3, 0, 2): 0x6000, (2, 1, 3): 0xE000}


def polygons(scene: Any, keys: list, uvs: Any, pos: Any, mats: list, textures: _Textures,
             ours: bool) -> list[dict]:
    """TR polygons from clockwise triangles (``keys`` their vertex ids, ``uvs``
    and ``pos`` their corners): each triangle in turn, unless already taken,
    pairs with the first later triangle of its material across one of its edges
    that makes an acceptable quad."""
    if not len(keys):
        return []
    k = np.asarray(keys, np.int64).reshape(-1, 3)
    uv = np.asarray(uvs, np.float64).reshape(-1, 3, 2)
    p = np.asarray(pos).reshape(-1, 3, 3)
    codes: dict = {}
    mat = np.asarray([codes.setdefault(m, len(codes)) for m in mats], np.int64)
    ci, cr, cj, cs = _candidates(k, mat)
    rows = np.stack([ci, ci, ci, cj], 1)
    cols = np.stack([cr, (cr + 1) % 3, (cr + 2) % 3, (cs + 2) % 3], 1)
    quv, qpos = uv[rows, cols], p[rows, cols]
    qkey = k[rows, cols]
    if textures.carried:
        # atlas corners are looked up (and their pixels filled) pair by pair, as met
        made: dict = {}

        def accept(c: int) -> bool:
            made[c] = _quad(scene, tuple(qkey[c].tolist()), quv[c], qpos[c], mats[ci[c]],
                            textures, ours)
            return made[c] is not None
        pairs = _pair(len(k), ci, cj, accept)
        return [_triangle(tuple(k[i].tolist()), uv[i], mats[i], textures) if c < 0 else made[c]
                for i, c in pairs]
    return next(baked_polygons_of(scene, [(keys, uvs, pos, mats)], textures))


def baked_polygons_of(scene: Any, meshes: list, textures: _Textures) -> Any:
    """Without an atlas, :func:`polygons` of several meshes (``(keys, uvs, pos,
    mats)`` each) in one pass over all their triangles, yielded mesh by mesh:
    their vertex ids made disjoint, no pair crosses meshes, and textures are
    baked in polygon order, as mesh after mesh would bake them.  A quad's
    texture index beyond a quad's range is refused with its mesh."""
    sizes = [len(m[0]) for m in meshes]
    ks, offsets, off = [], [], 0
    for m in meshes:
        k = np.asarray(m[0], np.int64).reshape(-1, 3)
        ks.append(k + off)
        offsets.append(off)
        off += int(k.max()) + 1 if len(k) else 0
    if not sum(sizes):
        yield from ([] for _ in meshes)
        return
    k = np.concatenate(ks)
    uv = np.concatenate([np.asarray(m[1], np.float64).reshape(-1, 3, 2) for m in meshes])
    p = np.concatenate([np.asarray(m[2]).reshape(-1, 3, 3) for m in meshes])
    mats = list(chain.from_iterable(m[3] for m in meshes))
    codes, mat = material_codes(mats)
    for m in codes:     # images decoded (and undecodable ones named) in order of first use
        textures.image(m)
    ci, cr, cj, cs = _candidates(k, mat)
    at = np.stack([ci * 3 + cr, ci * 3 + (cr + 1) % 3, ci * 3 + (cr + 2) % 3,
                   cj * 3 + (cs + 2) % 3], 1)          # (the corners by flat index)
    quv, qpos, qkey = uv.reshape(-1, 2)[at], p.reshape(-1, 3)[at], k.reshape(-1)[at]
    acc = np.flatnonzero(_flat_quads(qpos, quv, mat[ci], list(codes), textures))
    first, chosen = greedy_pairs(len(k), ci[acc], cj[acc])
    cand = np.where(chosen >= 0, acc[np.maximum(chosen, 0)] if len(acc) else -1, -1)
    shape, verts, index, attrs = _baked_columns(scene, first, cand, k, uv, qkey, quv, mat,
                                                list(codes), textures)
    poly_mesh = np.repeat(np.arange(len(meshes)), sizes)[first]
    verts -= np.asarray(offsets, np.int64)[poly_mesh][:, None]
    verts[shape == 8, 3] = 0
    verts = verts.astype(np.uint16)
    bounds = np.searchsorted(poly_mesh, np.arange(len(meshes) + 1)).tolist()
    for m, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        if not sizes[m]:
            yield []
            continue
        big = np.flatnonzero((shape[lo:hi] == 9) & (index[lo:hi] >= 0x8000))
        if len(big):
            model.texture_word(9, int(index[lo + big[0]]), 0)     # (its error)
        yield PolygonColumns(shape[lo:hi], verts[lo:hi], index[lo:hi], attrs[lo:hi],
                             np.zeros(hi - lo, np.int64))


def _candidates(k: np.ndarray, mat: np.ndarray) -> tuple:
    """(i, r, j, s) of every triangle j after triangle i, of its material, whose
    edge k[j][s] -> k[j][s+1] is i's diagonal k[i][r] -> k[i][r+2] with a fourth
    vertex k[j][s+2] of its own; in the order i, r, then j's edges in turn."""
    n = int(k.max()) + 1
    edges = (k * n + np.roll(k, -1, axis=1)).reshape(-1)
    order = np.argsort(edges, kind="stable")
    sorted_edges = edges[order]
    query = (k * n + np.roll(k, -2, axis=1)).reshape(-1)
    lo = np.searchsorted(sorted_edges, query, "left")
    hi = np.searchsorted(sorted_edges, query, "right")
    count = hi - lo
    q = np.repeat(np.arange(len(query)), count)
    at = np.repeat(lo - np.cumsum(count) + count, count) + np.arange(count.sum())
    i, r, j = q // 3, q % 3, order[at] // 3
    flat = k.reshape(-1)        # (corners by flat index: 2-D gathers are slower)
    i3, j3 = i * 3, j * 3
    a, b, c = flat[q], flat[i3 + (r + 1) % 3], flat[i3 + (r + 2) % 3]
    k0, k1 = flat[j3], flat[j3 + 1]
    s = np.where(k0 == a, 0, np.where(k1 == a, 1, 2))   # (list.index: the first)
    d = flat[j3 + (s + 2) % 3]
    keep = (j > i) & (mat[j] == mat[i]) & (flat[j3 + (s + 1) % 3] == c) \
        & (d != a) & (d != b) & (d != c)
    return i[keep], r[keep], j[keep], s[keep]


def _pair(count: int, ci: np.ndarray, cj: np.ndarray, accept: Any) -> list[tuple[int, int]]:
    """(triangle, candidate or -1) per polygon: the greedy pairing, first triangle first."""
    used = [False] * count
    starts = np.searchsorted(ci, np.arange(count + 1)).tolist()
    js = cj.tolist()
    out = []
    for i in range(count):
        if used[i]:
            continue
        used[i] = True
        chosen = -1
        for c in range(starts[i], starts[i + 1]):
            if not used[js[c]] and accept(c):
                chosen = c
                used[js[c]] = True
                break
        out.append((i, chosen))
    return out


def greedy_pairs(count: int, ci: np.ndarray, cj: np.ndarray,
                 rounds: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_pair` with every candidate acceptable, as arrays: per polygon its
    first triangle and its candidate (-1: a triangle).  The greedy pairing is
    the matching whose candidates are taken in order when neither triangle is
    taken yet, so a candidate first among the undecided ones at both its
    triangles is in it: rounds take those at once (one per quad strip step,
    a few for a mesh of grid cells) and the rest, if any, go one by one."""
    n = len(ci)
    state = np.zeros(n, np.int8)            # 0 undecided, 1 taken, 2 left out
    taken_tri = np.zeros(count, bool)
    edges = np.arange(n)
    for _ in range(rounds):
        if not len(edges):
            break
        low = np.full(count, n, np.int64)
        np.minimum.at(low, ci[edges], edges)
        np.minimum.at(low, cj[edges], edges)
        win = edges[(low[ci[edges]] == edges) & (low[cj[edges]] == edges)]
        state[win] = 1
        taken_tri[ci[win]] = taken_tri[cj[win]] = True
        rest = edges[state[edges] == 0]
        out = taken_tri[ci[rest]] | taken_tri[cj[rest]]
        state[rest[out]] = 2
        edges = rest[~out]
    if len(edges):      # long chains: the undecided rest in order, as _pair walks them
        used = taken_tri.tolist()
        st = state.tolist()
        for c, i, j in zip(edges.tolist(), ci[edges].tolist(), cj[edges].tolist()):
            if not used[i] and not used[j]:
                used[i] = used[j] = True
                st[c] = 1
        state = np.asarray(st, np.int8)
    win = np.flatnonzero(state == 1)
    chosen = np.full(count, -1, np.int64)
    chosen[ci[win]] = win
    second = np.zeros(count, bool)
    second[cj[win]] = True
    first = np.flatnonzero(~second)
    return first, chosen[first]


def _planar(p: np.ndarray) -> np.ndarray:
    """Whether each quad of ``p`` (N, 4, 3) is planar: the normals of its
    triangles (0, 1, 2) and (0, 2, 3) agree to 0.9999 (a degenerate one is not)."""
    x0, y0, z0 = p[:, 0].T
    x1, y1, z1 = p[:, 1].T
    x2, y2, z2 = p[:, 2].T
    x3, y3, z3 = p[:, 3].T
    ax, ay, az, bx, by, bz = x1 - x0, y1 - y0, z1 - z0, x2 - x0, y2 - y0, z2 - z0
    cx, cy, cz = x3 - x0, y3 - y0, z3 - z0
    n1 = (ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx)
    n2 = (by * cz - bz * cy, bz * cx - bx * cz, bx * cy - by * cx)
    l1 = np.sqrt(n1[0] * n1[0] + n1[1] * n1[1] + n1[2] * n1[2])
    l2 = np.sqrt(n2[0] * n2[0] + n2[1] * n2[1] + n2[2] * n2[2])
    with np.errstate(divide="ignore", invalid="ignore"):
        return (l1 != 0) & (l2 != 0) & \
            ((n1[0] * n2[0] + n1[1] * n2[1] + n1[2] * n2[2]) / (l1 * l2) >= 0.9999)


def _affine(p: np.ndarray, texels: np.ndarray) -> np.ndarray:
    """Whether each quad's texture is one affine map of its corners, so a
    rectangle's texels drawn on it (the engine maps them affinely per triangle,
    along either diagonal) show what its two glTF triangles show: its positions
    ``p`` (N, 4, 3) and its UVs in texels ``texels`` (N, 4, 2) are both
    parallelograms (the UVs within half a texel)."""
    size = np.maximum((p.max(1) - p.min(1)).max(1), 1e-12)
    skew = np.abs(p[:, 0] + p[:, 2] - p[:, 1] - p[:, 3]).max(1, initial=0.0)
    uv_skew = np.abs(texels[:, 0] + texels[:, 2] - texels[:, 1] - texels[:, 3]).max(1)
    return (skew <= 1e-3 * size) & (uv_skew <= 0.5)


def _flat_quads(qpos: np.ndarray, quv: np.ndarray, qcode: np.ndarray, materials: list,
                textures: _Textures) -> np.ndarray:
    """Whether each candidate quad (no atlas) is planar and, textured, affine:
    the tests of :func:`_quad`, on every pair at once (``qcode`` each one's
    material, an index into ``materials``)."""
    p = qpos.astype(np.float64)
    ok = _planar(p)
    for c, m in enumerate(materials):
        arr, _ = textures.image(m)
        if arr is None:
            continue
        rows = np.flatnonzero(qcode == c)
        ok[rows] &= _affine(p[rows], quv[rows] * np.asarray((arr.shape[1], arr.shape[0]),
                                                            np.float64))
    return ok


def _baked_columns(scene: Any, first: np.ndarray, cand: np.ndarray, k: np.ndarray,
                   uv: np.ndarray, qkey: np.ndarray, quv: np.ndarray, mat: np.ndarray,
                   materials: list, textures: _Textures) -> tuple:
    """The polygons of a pairing without atlas (``first`` triangle and quad
    candidate or -1 per polygon) as columns (shape, (n, 4) vertex ids, texture
    index, attributes): every texture baked, in polygon order.  (A triangle's
    word is its index, ``_TRI[(0, 1, 3)]`` being 0, and so is an unmirrored quad's.)"""
    tri = cand < 0
    corner_uv = np.zeros((len(first), 4, 2))
    corner_uv[tri, :3] = uv[first[tri]]
    corner_uv[~tri] = quv[cand[~tri]]
    code = mat[first]
    index = np.asarray(textures.bake_many([materials[c] for c in code.tolist()], corner_uv,
                                          np.where(tri, 3, 4)), np.int64)
    verts = np.zeros((len(first), 4), np.int64)
    verts[tri, :3] = k[first[tri]]
    verts[~tri] = qkey[cand[~tri]]
    attrs = np.asarray([_attributes(scene, m) for m in materials], np.int64)[code]
    return np.where(tri, 8, 9), verts, index, attrs


def _attributes(scene: Any, material: int | None) -> int:
    if material is None or not 0 <= material < len(scene.materials):
        return 0
    m = scene.materials[material]
    carried = m.extras.get("tr4_attributes")
    if isinstance(carried, int) and 0 <= carried <= 0xFF:
        return carried
    return 1 if m.extras.get("additive") or m.alpha_mode == "BLEND" else 0
def _triangle(k: tuple, uv: np.ndarray, material: int | None, textures: _Textures) -> dict:
    found = textures.carried_index(material, uv)
    flags = None
    if found is not None:
        index, corners = found
        turn = next((t for t in range(3) if corners[t:] + corners[:t] in _TRI), 0)
        k, flags = k[turn:] + k[:turn], _TRI.get(corners[turn:] + corners[:turn])
    if flags is None:
        index, corners = textures.bake(material, uv)
        flags = _TRI[corners]
    return {"shape": 8, "vertices": np.asarray(k, np.uint16), "texture": flags | index,
            "attributes": _attributes(textures.scene, material), "unknown": 0}


def _quad(scene: Any, k: tuple, uv: np.ndarray, pos: np.ndarray, material: int | None,
          textures: _Textures, ours: bool) -> dict | None:
    found = textures.carried_index(material, uv)
    if found is not None:
        index, corners = found
        flags = _QUAD.get(corners)
        # a quad paired from its second triangle (triangles in another order, as
        # Blender may give them) starts at the far end of its diagonal
        if flags is None and corners[2:] + corners[:2] in _QUAD:
            k, flags = k[2:] + k[:2], _QUAD[corners[2:] + corners[:2]]
        if flags is None or (flags and index == 0):
            return None
    else:
        if ours and textures.carried:
            return None
        p = pos.astype(np.float64)[None]
        if not _planar(p)[0]:
            return None      # not planar (or degenerate): keep two triangles
        arr, _ = textures.image(material)
        if arr is not None and not _affine(p, np.asarray(uv, np.float64)[None] * np.asarray(
                (arr.shape[1], arr.shape[0]), np.float64))[0]:
            return None      # one rectangle would skew its texture: two triangles, each affine
        index, corners = textures.bake(material, uv)
        flags = 0
    return {"shape": 9, "vertices": np.asarray(k, np.uint16),
            "texture": model.texture_word(9, index, flags),
            "attributes": _attributes(scene, material), "unknown": 0}



