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


def weld(*keys: Any) -> tuple:
    """Unique vertices from per-corner keys.

    Each key is a (C,) or (C, k) array over the same C corners (e.g. a
    position index and a UV index, or raw float attributes).  Returns
    ``(first, remap)``: ``first`` (V,) is one representative corner per unique
    key tuple (in order of first appearance) and ``remap`` (C,) maps each
    corner to its vertex, so ``attr[first]`` builds vertex arrays and
    ``remap`` is the index buffer.
    """
    cols = []
    for k in keys:
        a = np.asarray(k)
        a = a.reshape(len(a), -1)
        if a.dtype.kind == "f":
            a = np.ascontiguousarray(a).view(np.uint8).reshape(len(a), -1)
        cols.append(np.ascontiguousarray(a).view(np.uint8).reshape(len(a), -1))
    if not cols or len(cols[0]) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = np.ascontiguousarray(np.concatenate(cols, axis=1))
    void = rows.view(np.dtype((np.void, rows.shape[1]))).reshape(-1)
    _, first_sorted, inverse = np.unique(void, return_index=True, return_inverse=True)
    order = np.argsort(first_sorted, kind="stable")       # keep first-appearance order
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first_sorted[order].astype(np.int64), rank[inverse.reshape(-1)].astype(np.int64)


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
