"""Vectorised mesh helpers shared by the families (no per-vertex Python loops)."""
from __future__ import annotations

from typing import Any

import numpy as np


def flip_winding(indices: Any) -> np.ndarray:
    """Reverse every triangle of a flat triangle list (swap corners 1 and 2)."""
    tri = np.asarray(indices).reshape(-1, 3)
    return tri[:, [0, 2, 1]].reshape(-1).copy()


def fan_triangulate(sizes: Any, corners: Any | None = None) -> np.ndarray:
    """Triangulate polygons as fans.

    ``sizes`` (P,) gives the corner count of each polygon, whose corners are
    consecutive in ``corners`` (default: 0, 1, 2, ... i.e. the result indexes
    corners).  Polygons with fewer than 3 corners are dropped.  Returns a flat
    triangle list ``(c0, ci, ci+1)`` keeping the polygons' winding; quads
    (a, b, c, d) become (a, b, c), (a, c, d).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    ntri = np.maximum(sizes - 2, 0)
    total = int(ntri.sum())
    poly = np.repeat(np.arange(len(sizes)), ntri)
    # k = 1 .. n-2 within each polygon
    first = np.concatenate([[0], np.cumsum(ntri)[:-1]]).astype(np.int64)
    k = np.arange(total, dtype=np.int64) - np.repeat(first, ntri) + 1
    base = starts[poly]
    tri = np.stack([base, base + k, base + k + 1], axis=1).reshape(-1)
    if corners is not None:
        tri = np.asarray(corners)[tri]
    return tri


def strip_or_fan_triangles(seq: Any, mode: int) -> np.ndarray:
    """TRIANGLE_STRIP (5) / TRIANGLE_FAN (6) indices to a triangle list, keeping
    the strip's alternating winding, dropping degenerate triangles."""
    seq = np.asarray(seq).reshape(-1)
    n = len(seq)
    if n < 3:
        return np.zeros(0, np.uint32)
    k = np.arange(n - 2)
    if mode == 5:
        odd = (k % 2).astype(bool)
        a = seq[k]
        b = np.where(odd, seq[k + 2], seq[k + 1])
        c = np.where(odd, seq[k + 1], seq[k + 2])
    else:
        a = np.full(n - 2, seq[0])
        b, c = seq[k + 1], seq[k + 2]
    tri = np.stack([a, b, c], axis=1)
    keep = (tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])
    return tri[keep].reshape(-1).astype(np.uint32)


def vector_lengths(v: np.ndarray) -> np.ndarray:
    """``np.linalg.norm(v, axis=-1)`` of 3-vectors, the same bits (the squares
    summed x, y, z in that order): a reduction over a length-3 last axis is
    several times slower than adding the three columns."""
    v = np.asarray(v, np.float64)
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    return np.sqrt((x * x + y * y) + z * z)


def column_extremes(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(p.min(axis=0), p.max(axis=0))`` of (N, 3) points, column by column (the
    same values: a reduction down the long axis of an (N, 3) array is slow)."""
    cols = [p[:, k] for k in range(p.shape[1])]
    return (np.array([c.min() for c in cols], p.dtype), np.array([c.max() for c in cols], p.dtype))


def lexicographic_labels(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` of (N, K) numeric rows:
    the distinct rows in lexicographic order by value (-0.0 equal to 0.0) and
    each row's index among them, from one ``np.lexsort`` instead of a sort of
    whole rows."""
    rows = np.asarray(rows)
    if not len(rows):
        return rows[:0], np.zeros(0, np.int64)
    order = np.lexsort(rows.T[::-1])
    srt = rows[order]
    new = np.ones(len(srt), bool)
    new[1:] = (srt[1:] != srt[:-1]).any(axis=1)
    label = np.empty(len(rows), np.int64)
    label[order] = np.cumsum(new) - 1
    return srt[new], label


def first_labels(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(reps, label)`` of small non-negative integer keys: the first position of
    each distinct key (ascending) and each position's index among them, by a table
    as long as the largest key, not a sort (``np.unique`` by first appearance).
    The tables are per key, not per position: a position array less to fill."""
    key = np.asarray(key, np.int64)
    first = np.full(int(key.max()) + 1 if len(key) else 0, len(key))
    np.minimum.at(first, key, np.arange(len(key)))
    is_first = np.zeros(len(key), bool)
    is_first[first[first < len(key)]] = True
    reps = np.flatnonzero(is_first)
    rank = np.empty(len(first), np.int64)              # each key's place among the firsts
    rank[np.take(key, reps)] = np.arange(len(reps))
    return reps, np.take(rank, key)


_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)


def padded_rows(n: int, width: int) -> np.ndarray:
    """Zeroed (n, width rounded up to 8) uint8 rows, to fill with key bytes:
    :func:`row_groups` reads them as 64-bit words without copying them wider."""
    return np.zeros((n, -(-width // 8) * 8), np.uint8)


def row_groups(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows of equal bytes grouped: ``(first, inverse)``, ``first`` (G,) the
    first row of each group (the groups in no particular order) and ``inverse``
    (R,) each row's group; None in the unlikely case that two different rows
    hash alike (the caller then sorts the rows themselves).  Rows of a group are
    equal when each equals the one before it in hash order.

    ``rows`` is (R, W) uint8.  Each row is hashed to one 64-bit word and the
    words sorted, several times faster than sorting the rows (a ``np.unique``
    of ``W``-byte void rows); the groups are then checked byte for byte.  Rows
    as wide as a multiple of 8 bytes (:func:`padded_rows`) are read in place."""
    rows = np.ascontiguousarray(rows, np.uint8)
    n, width = rows.shape
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if width % 8:
        wide = padded_rows(n, width)
        wide[:, :width] = rows
        rows = wide
    words = rows.view(np.uint64)
    h = np.full(n, 0xCBF29CE484222325, np.uint64)
    for j in range(words.shape[1]):           # wraps modulo 2**64, as a hash should
        h ^= words[:, j]
        h *= _HASH_MUL
        h ^= h >> np.uint64(29)
    order = np.argsort(h)
    hs = h[order]
    new = np.ones(n, bool)
    new[1:] = hs[1:] != hs[:-1]
    same = ~new[1:]
    for j in range(words.shape[1]):           # in hash order, each row as its group's previous
        col = np.take(words[:, j], order)     # (a column at a time: 2-D gathers are slow)
        if (same & (col[1:] != col[:-1])).any():
            return None
    first = np.minimum.reduceat(order, np.flatnonzero(new))
    inverse = np.empty(n, np.int64)
    inverse[order] = np.cumsum(new) - 1
    return first, inverse


def weld(*keys: Any) -> tuple:
    """Unique vertices from per-corner keys.

    Each key is a (C,) or (C, k) array over the same C corners (e.g. a
    position index and a UV index, or raw float attributes).  Returns
    ``(first, remap)``: ``first`` (V,) is one representative corner per unique
    key tuple (in order of first appearance) and ``remap`` (C,) maps each
    corner to its vertex, so ``attr[first]`` builds vertex arrays and
    ``remap`` is the index buffer.
    """
    if not keys or len(keys[0]) == 0:        # (an empty (0, k) array has no -1 reshape)
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cols = []
    for k in keys:
        a = np.asarray(k)
        a = a.reshape(len(a), -1)
        cols.append(np.ascontiguousarray(a).view(np.uint8).reshape(len(a), -1))
    rows = padded_rows(len(cols[0]), sum(c.shape[1] for c in cols))
    at = 0
    for c in cols:
        rows[:, at:at + c.shape[1]] = c
        at += c.shape[1]
    groups = row_groups(rows)
    if groups is None:                # a hash collision: sort the rows themselves
        void = rows.view(np.dtype((np.void, rows.shape[1]))).reshape(-1)
        _, first_sorted, inverse = np.unique(void, return_index=True, return_inverse=True)
    else:
        first_sorted, inverse = groups
    # first-appearance order: the groups' first rows are distinct row numbers, so
    # marking them and counting the marks ranks them without a sort
    is_first = np.zeros(len(rows), bool)
    is_first[first_sorted] = True
    rank = np.cumsum(is_first) - 1
    return np.flatnonzero(is_first), rank[first_sorted][inverse.reshape(-1)].astype(np.int64)


def flattened_triangles(before: Any, after: Any, triangles: Any) -> int:
    """How many of ``triangles`` (T, 3) have an area over ``before`` (V, 3) and
    none over ``after``, the same vertices at a format's precision (TR4's whole
    units, 3Space's 8-bit steps): detail the target cannot hold, worth a word."""
    tris = np.asarray(triangles, np.int64).reshape(-1, 3)
    if not len(tris):
        return 0
    def areas(c: np.ndarray) -> np.ndarray:
        # np.linalg.norm(np.cross(u, v), axis=1) written out (the same operations
        # in the same order, without their per-call cost, paid once per bone mesh)
        u, v = c[:, 1] - c[:, 0], c[:, 2] - c[:, 0]
        x = u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1]
        y = u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2]
        z = u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]
        return np.sqrt(x * x + y * y + z * z)
    corners = np.take(np.asarray(before, np.float64), tris, axis=0)    # (T, 3, 3), gathered once
    used = corners.reshape(-1, 3)
    extent = float((used.max(0) - used.min(0)).max())     # (np.ptp, without its cost)
    had = areas(corners) > 1e-9 * extent * extent
    return int((had & (areas(np.take(np.asarray(after, np.float64), tris, axis=0)) == 0)).sum())


def compute_normals(positions: Any, indices: Any | None = None) -> np.ndarray:
    """Smooth per-vertex normals (area-weighted face normals summed), float32,
    counter-clockwise front faces.  Vertices in no triangle get (0, 1, 0)."""
    p = np.asarray(positions, dtype=np.float64)
    idx = np.arange(len(p)) if indices is None else np.asarray(indices, dtype=np.int64)
    tri = idx[: len(idx) // 3 * 3].reshape(-1, 3)
    fn = np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])
    n = np.zeros_like(p)
    for c in range(3):
        np.add.at(n, tri[:, c], fn)
    length = np.linalg.norm(n, axis=1, keepdims=True)
    ok = length[:, 0] > 1e-20
    out = np.tile(np.array([0.0, 1.0, 0.0]), (len(p), 1))
    out[ok] = n[ok] / length[ok]
    return out.astype(np.float32)


def limit_influences(joints: Any, weights: Any, k: int = 4) -> tuple:
    """Keep the ``k`` largest influences per vertex and renormalise.

    ``joints``/``weights`` are (N, m).  Returns ``(joints (N, k) uint16,
    weights (N, k) float32, truncated_vertex_count)``.  Vertices whose
    weights are all zero get joint 0 with weight 1.
    """
    j = np.asarray(joints)
    w = np.asarray(weights, dtype=np.float64)
    n, m = w.shape
    if m < k:
        j = np.concatenate([j, np.zeros((n, k - m), j.dtype)], axis=1)
        w = np.concatenate([w, np.zeros((n, k - m))], axis=1)
        m = k
    order = np.argsort(-w, axis=1, kind="stable")[:, :k]
    truncated = (int(np.count_nonzero(np.any(np.sort(w, axis=1)[:, : m - k] > 0, axis=1)))
                 if m > k else 0)
    jk = np.take_along_axis(j, order, axis=1)
    wk = np.take_along_axis(w, order, axis=1)
    wk = np.where(wk > 0, wk, 0.0)
    s = wk.sum(axis=1, keepdims=True)
    none = s[:, 0] <= 0
    wk = np.where(s > 0, wk / np.where(s > 0, s, 1.0), 0.0)
    wk[none, 0] = 1.0
    jk = np.where(wk > 0, jk, 0)
    jk[none, 0] = 0
    return jk.astype(np.uint16), wk.astype(np.float32), truncated


def rigid_influences(vertex_joint: Any) -> tuple:
    """One joint per vertex with weight 1: (joints (N, 4) uint16, weights (N, 4) float32)."""
    vj = np.asarray(vertex_joint, dtype=np.uint16)
    j = np.zeros((len(vj), 4), np.uint16)
    w = np.zeros((len(vj), 4), np.float32)
    j[:, 0] = vj
    w[:, 0] = 1.0
    return j, w


def triangulate_polygons(sizes: Any, positions: Any) -> np.ndarray:
    """Triangles for planar-ish polygons, ``n - 2`` per polygon of ``n >= 3`` corners.

    ``sizes`` (P,) are corner counts; ``positions`` (C, 3) the corner positions,
    polygon after polygon.  Returns (T, 3) corner indices (into ``positions``)
    in the polygons' winding.  Triangles and convex polygons are fans; a concave
    quad is split on its inside diagonal; every other concave polygon is
    projected on the plane of its Newell normal and cut by mapbox-earcut
    (O(n log n) with its z-order index: a quadratic ear clipper took minutes on
    the 10^4-corner n-gons real exporters write).  The triangle count always
    matches the fan's (the count ufbx gives), so corners earcut drops as exactly
    collinear get zero-area triangles on the polygon's edge and a polygon it
    cannot cut at all (degenerate) keeps its fan; when earcut's repair of a
    near self-touching outline leaves one triangle fewer, a zero-area
    triangle on a polygon edge fills the count.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    tri = fan_triangulate(sizes).reshape(-1, 3)
    if not len(tri):
        return tri
    ntri = np.maximum(sizes - 2, 0)
    first_tri = np.concatenate([[0], np.cumsum(ntri)[:-1]]).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    quads = np.flatnonzero(sizes == 4)
    if len(quads):
        c = starts[quads][:, None] + np.arange(4)
        q = p[c]
        n1 = np.cross(q[:, 1] - q[:, 0], q[:, 2] - q[:, 0])
        n2 = np.cross(q[:, 2] - q[:, 0], q[:, 3] - q[:, 0])
        bad = np.einsum("ij,ij->i", n1, n2) < 0  # diagonal 0-2 lies outside
        if bad.any():
            t = first_tri[quads[bad]]
            cb = c[bad]
            tri[t] = cb[:, [0, 1, 3]]
            tri[t + 1] = cb[:, [1, 2, 3]]
    for poly in _concave_ngons(sizes, starts, p):
        s, n = int(starts[poly]), int(sizes[poly])
        cut = earcut_polygon(p[s:s + n])
        if cut is not None:
            tri[first_tri[poly]:first_tri[poly] + n - 2] = cut + s
    return tri


def _concave_ngons(sizes: np.ndarray, starts: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Indices of polygons with more than 4 corners having a reflex or straight
    corner (relative to their Newell normal), found for all polygons at once."""
    big = np.flatnonzero(sizes > 4)
    if not len(big):
        return big
    n = sizes[big]
    poly = np.repeat(np.arange(len(big)), n)
    local_start = np.concatenate([[0], np.cumsum(n)[:-1]])
    k = np.arange(int(n.sum())) - local_start[poly]
    cur = starts[big][poly] + k
    nxt = starts[big][poly] + (k + 1) % n[poly]
    prv = starts[big][poly] + (k - 1) % n[poly]
    origin = p[starts[big][poly]]  # relative to the first corner, for precision
    normal = np.add.reduceat(np.cross(p[cur] - origin, p[nxt] - origin), local_start, axis=0)
    turn = np.cross(p[cur] - p[prv], p[nxt] - p[cur])
    # a corner that does not turn (a repeated or collinear corner) hides the turn of its
    # neighbours from this test, so such polygons go to earcut too
    reflex = np.einsum("ij,ij->i", turn, normal[poly]) <= 0
    return big[np.add.reduceat(reflex.astype(np.int64), local_start) > 0]


def earcut_polygon(points: Any) -> np.ndarray | None:
    """(n - 2, 3) triangles of one polygon (n, 3) in its winding, or None when
    it has no area to cut."""
    import mapbox_earcut

    p = np.asarray(points, dtype=np.float64)
    n = len(p)
    p = p - p[0]
    normal = np.sum(np.cross(p, np.roll(p, -1, axis=0)), axis=0)  # Newell
    if not np.all(np.isfinite(normal)) or not np.any(normal):
        return None
    axis = int(np.argmax(np.abs(normal)))
    flat = np.ascontiguousarray(np.delete(p, axis, axis=1))
    # (y, z), (z, x), (x, y) are right-handed seen along +x, +y, +z: dropping y
    # leaves (x, z), mirrored; look from the front so the winding is counter-clockwise
    if (normal[axis] < 0) != (axis == 1):
        flat = np.ascontiguousarray(flat[:, ::-1])
    cut = np.asarray(mapbox_earcut.triangulate_float64(flat, np.array([n], np.uint32)),
                     dtype=np.int64).reshape(-1, 3)
    if not len(cut):
        return None
    a, b, c = flat[cut[:, 0]], flat[cut[:, 1]], flat[cut[:, 2]]
    area = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    cut[area < 0] = cut[area < 0][:, [0, 2, 1]]  # the polygon's (counter-clockwise) winding
    if len(cut) < n - 2:  # exactly collinear or repeated corners it skipped
        used = np.zeros(n, bool)
        used[cut.reshape(-1)] = True
        idle = np.flatnonzero(~used)
        slivers = np.stack([(idle - 1) % n, idle, (idle + 1) % n], axis=1)
        cut = np.concatenate([cut, slivers])[:n - 2]
    if len(cut) < n - 2:  # earcut cured a near self-touch: pad with empty triangles
        k = np.arange(n - 2 - len(cut))
        cut = np.concatenate([cut, np.stack([k, k, k + 1], axis=1)])
    return cut[:n - 2]
