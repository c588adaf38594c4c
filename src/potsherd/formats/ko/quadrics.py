"""Error quadrics of a mesh for progressive-mesh generation (:mod:`.pmgen`):
per-face plane quadrics (Garland-Heckbert 1997), planes along open edges that
hold borders and seams, and each face's plane in position + attribute space
(Garland-Heckbert 1998), summed per vertex by ``np.bincount`` on their upper
halves (the floats of ``np.add.at``, in a fraction of its time)."""
from __future__ import annotations

import numpy as np

BORDER_WEIGHT = 10.0    #: weight of the border-keeping planes relative to face planes
SEAM_WEIGHT = 0.1       #: the same along UV and normal seams (closed by position)


def sum_into(n: int, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``out[index[i]] += values[i]`` for every ``i`` in order, into ``n`` zero
    (k, k) symmetric matrices: what ``np.add.at`` does (see :func:`sum_upper`)."""
    k = values.shape[-1]
    upper = np.triu_indices(k)
    return sum_upper(n, index, values[:, upper[0], upper[1]].T, k)


def sum_upper(n: int, index: np.ndarray, upper: np.ndarray, k: int) -> np.ndarray:
    """(n, k, k) symmetric sums of the matrices whose upper halves (in
    ``np.triu_indices(k)`` order) are the rows of ``upper`` (entries, N), each
    summed into row ``index[i]`` in ``i`` order, by one ``np.bincount`` per entry:
    it sums in ``np.add.at``'s order, so the floats are the same, in a fraction
    of its time, and a quadric's lower half is its upper half's mirror."""
    out = np.empty((n, k, k))
    for i, j, column in zip(*np.triu_indices(k), np.ascontiguousarray(upper)):
        out[:, i, j] = out[:, j, i] = np.bincount(index, weights=column, minlength=n)
    return out


def plane_quadric_rows(pos: np.ndarray, tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-face area-weighted plane quadrics as the rows of their upper halves
    (10, T), in ``np.triu_indices(4)`` order (what :func:`sum_upper` sums,
    without the (T, 4, 4) matrices), and the faces' unit normals."""
    a, b, c = pos[tris[:, 0]], pos[tris[:, 1]], pos[tris[:, 2]]
    n = np.cross(b - a, c - a)
    area = np.linalg.norm(n, axis=1)
    unit = n / np.where(area > 0, area, 1.0)[:, None]
    d = -np.einsum("ij,ij->i", unit, a)
    p = np.concatenate([unit, d[:, None]], axis=1).T
    half = area / 2
    return np.array([p[i] * p[j] * half for i, j in zip(*np.triu_indices(4))]), unit


def attribute_quadrics(pos: np.ndarray, attrs: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """(V, n+1, n+1) quadrics of each face's plane through its corners in
    (position, attributes) space, area-weighted and summed per corner vertex
    (Garland-Heckbert 1998): zero at a point of the face's own linear map, so
    an attribute field that is linear over a vertex's faces costs nothing to
    collapse, however far its values move."""
    pts = np.concatenate([pos, attrs], axis=1)
    p1, p2, p3 = pts[tris[:, 0]], pts[tris[:, 1]], pts[tris[:, 2]]
    e1 = p2 - p1
    l1 = np.linalg.norm(e1, axis=1)
    e1 = e1 / np.where(l1 > 0, l1, 1.0)[:, None]
    e2 = p3 - p1
    e2 = e2 - np.einsum("ij,ij->i", e2, e1)[:, None] * e1
    l2 = np.linalg.norm(e2, axis=1)
    e2 = e2 / np.where(l2 > 0, l2, 1.0)[:, None]
    n = pts.shape[1]
    d1, d2 = np.einsum("ij,ij->i", p1, e1), np.einsum("ij,ij->i", p1, e2)
    a, bb, cc = pos[tris[:, 0]], pos[tris[:, 1]], pos[tris[:, 2]]
    area = np.linalg.norm(np.cross(bb - a, cc - a), axis=1) / 2
    # the upper half of each face's [[A, b], [b, c]] times its area, entry by
    # entry: A = I - e1 e1^T - e2 e2^T, b = d1 e1 + d2 e2 - p1,
    # c = p1.p1 - d1^2 - d2^2 (the same operations, so the same floats, as
    # building the (T, n+1, n+1) matrices, without them)
    e1t, e2t, p1t = e1.T, e2.T, p1.T
    rows = []
    for i, j in zip(*np.triu_indices(n + 1)):
        if j < n:
            rows.append(((1.0 if i == j else 0.0) - e1t[i] * e1t[j] - e2t[i] * e2t[j]) * area)
        elif i < n:
            rows.append((d1 * e1t[i] + d2 * e2t[i] - p1t[i]) * area)
        else:
            rows.append((np.einsum("ij,ij->i", p1, p1) - d1 * d1 - d2 * d2) * area)
    return sum_upper(len(pos), tris.T.reshape(-1), np.tile(np.array(rows), 3), n + 1)


def open_edges(edges: np.ndarray) -> np.ndarray:
    """Which of ``edges`` (E, 2) only one face uses."""
    if not len(edges):
        return np.zeros(0, bool)
    e = np.sort(edges, axis=1).astype(np.int64)
    key = e[:, 0] * (int(e[:, 1].max()) + 1) + e[:, 1]       # one integer per undirected edge
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)] == 1


def border_quadrics(pos: np.ndarray, tris: np.ndarray, normals: np.ndarray,
                     label: np.ndarray) -> np.ndarray:
    """(V, 4, 4) quadrics of planes through open edges, perpendicular to their
    face: the mesh's borders (open by position, ``label``) at ``BORDER_WEIGHT``,
    its seams (open by vertex, closed by position) at ``SEAM_WEIGHT``."""
    out = np.zeros((len(pos), 4, 4))
    edges = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    face = np.tile(np.arange(len(tris)), 3)
    open_ = open_edges(edges)
    if not open_.any():
        return out
    weight = np.where(open_edges(label[edges]), BORDER_WEIGHT, SEAM_WEIGHT)[open_]
    e, f = edges[open_], face[open_]
    a, b = pos[e[:, 0]], pos[e[:, 1]]
    along = b - a
    length = np.linalg.norm(along, axis=1)
    n = np.cross(along, normals[f])
    nl = np.linalg.norm(n, axis=1)
    n = n / np.where(nl > 0, nl, 1.0)[:, None]
    d = -np.einsum("ij,ij->i", n, a)
    p = np.concatenate([n, d[:, None]], axis=1)
    q = np.einsum("ti,tj->tij", p, p) * (weight * length * length)[:, None, None]
    return sum_into(len(pos), np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([q, q]))
