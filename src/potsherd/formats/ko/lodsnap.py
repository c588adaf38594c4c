"""Level-of-detail meshes as snapshots of one collapse order, made with arrays.

A skin (``.n3cskins``) holds four separate index meshes, not a progressive
mesh, so only the meshes at its vertex counts matter, not the records between
them.  They are taken here from the compiled simplifier's collapse order
(:func:`..pmgen.compiled_schedule`) without stepping through it: the first
``k`` collapses of positions are a forest, each position's root (pointer
jumping) is where it went, and the triangles whose three corners land at three
distinct positions are the mesh after those ``k`` collapses.

The rules are those of :mod:`..pmgen`'s replay, taken whole:

* a *position* collapses, all its copies (a UV seam's two sides, a hard edge's
  normals) together, so no level opens a crack;
* each copy lands on the copy at the target position nearest to it in UV, then
  normal, so it keeps its side of a seam;
* a collapse whose removed or kept position is already gone is skipped, as the
  replay skips it;
* vertices never move: a level's vertices are input vertices, with their UVs,
  normals and skin weights.

The levels are nested (each is the one above with more collapses done).  What
the replay adds (the engine's records, the greedy tail to no triangles) is not
needed for a skin, and the replay is one Python step per collapse: a
60-joint character's three levels took 0.3-0.4 s that way, and take about
15 ms besides the simplifier here."""
from __future__ import annotations

import numpy as np

from ...scene.geometry import lexicographic_labels
from .pmgen import compiled_schedule

#: weight of the normals to the UVs when a copy picks its copy at the target
#: (UVs decide; normals only part copies whose UVs agree, a hard edge's sides)
NORMAL_WEIGHT = 1e-4
#: rounds of the search for a level's collapse count (each one array pass)
SEARCH_ROUNDS = 6
#: (vertex, copy) pairs compared at once when copies pick their copy at a target
CHUNK_ROWS = 1 << 20
#: a position with more copies than this is landed on at its first copy
MAX_CHOICE = 1024


def accepted_collapses(schedule: np.ndarray, positions: int) -> np.ndarray:
    """(K', 2) the pairs of ``schedule`` that collapse two live positions, in
    order: a pair whose removed or kept position went earlier is skipped (the
    simplifier collapses copies one at a time; here a position goes once).

    Only a pair whose removed or kept position is removed by an earlier pair
    can be skipped; the others (all of them where no position has copies) are
    kept without a look, and the few suspects are decided in order."""
    if not len(schedule):
        return schedule.reshape(0, 2)
    a, b = schedule[:, 0], schedule[:, 1]
    idx = np.arange(len(a))
    first = np.full(positions, len(a), np.int64)
    np.minimum.at(first, a, idx)                  # first pair removing each position
    suspect = (first[a] < idx) | (first[b] < idx)
    keep = ~suspect
    sus = np.flatnonzero(suspect)
    if len(sus):
        # a position is gone after the first kept pair removing it: a sure one
        # (its first removal, where it is not a suspect) or a suspect kept below
        gone_at = np.full(positions, len(a), np.int64)
        np.minimum.at(gone_at, a[keep], idx[keep])
        gone = gone_at.tolist()
        for i, pa, pb in zip(sus.tolist(), a[sus].tolist(), b[sus].tolist()):
            if gone[pa] < i or gone[pb] < i:
                continue
            keep[i] = True
            if i < gone[pa]:
                gone[pa] = i
    return schedule[keep]


def roots(pairs: np.ndarray, positions: int) -> np.ndarray:
    """(P,) each position's final position after ``pairs`` (removed, kept),
    by pointer jumping: each removed position is removed once, so the pairs
    are a forest."""
    parent = np.arange(positions)
    parent[pairs[:, 0]] = pairs[:, 1]
    while True:
        up = parent[parent]
        if np.array_equal(up, parent):
            return parent
        parent = up


class _Copies:
    """The vertices at each position, for choosing a copy at a target."""

    def __init__(self, label: np.ndarray, keys: np.ndarray | None) -> None:
        self.label = label
        self.by_label = np.argsort(label, kind="stable")
        self.count = np.bincount(label)
        self.start = np.cumsum(self.count) - self.count
        self.keys = None if keys is None else np.nan_to_num(keys)   # (every distance a number)

    def landing(self, root: np.ndarray) -> np.ndarray:
        """(V,) the vertex each vertex becomes: itself where its position stays,
        else the copy at its position's root nearest in ``keys`` (the first
        copy without keys; the first of equals)."""
        label = self.label
        out = np.arange(len(label))
        moved = np.flatnonzero(root[label] != label)
        if not len(moved):
            return out
        target = root[label[moved]]
        n = self.count[target]
        one = n == 1
        out[moved[one]] = self.by_label[self.start[target[one]]]
        many = np.flatnonzero(~one)
        if not len(many):
            return out
        v, t, k = moved[many], target[many], n[many]
        out[v] = self.by_label[self.start[t]]              # the first copy, unless...
        if self.keys is None:
            return out
        # ... one nearer in keys: all copies compared, in chunks of rows (a
        # position of over MAX_CHOICE copies keeps its first: no model's seam
        # or pole has so many, and comparing them all is vertices x copies)
        pick = np.flatnonzero(k <= MAX_CHOICE)
        ends = np.cumsum(k[pick])
        at = 0
        while at < len(pick):
            stop = int(np.searchsorted(ends, (ends[at - 1] if at else 0) + CHUNK_ROWS, "right"))
            stop = max(stop, at + 1)
            rows = pick[at:stop]
            out[v[rows]] = self._nearest(v[rows], t[rows], k[rows])
            at = stop
        return out

    def _nearest(self, v: np.ndarray, t: np.ndarray, k: np.ndarray) -> np.ndarray:
        """For each vertex ``v``, the copy at position ``t`` (``k`` copies)
        nearest to it in keys, the first of equals."""
        seg = np.cumsum(k) - k                          # each vertex's first row
        row = np.repeat(np.arange(len(v)), k)
        within = np.arange(int(k.sum())) - seg[row]
        cand = self.by_label[self.start[t][row] + within]
        d = ((self.keys[cand] - self.keys[v][row]) ** 2).sum(axis=1)
        nearest = np.flatnonzero(d == np.minimum.reduceat(d, seg)[row])
        first = nearest[np.searchsorted(nearest, seg)]  # each vertex's first nearest row
        return cand[first]


def snapshot(tris: np.ndarray, copies: _Copies, root: np.ndarray) -> np.ndarray:
    """(T', 3) the triangles after the collapses ``root`` sums up: corners
    moved to their landing copies, those no longer spanning three positions
    dropped, the rest in input order."""
    at = copies.landing(root)[tris]
    lab = copies.label[at]
    live = (lab[:, 0] != lab[:, 1]) & (lab[:, 1] != lab[:, 2]) & (lab[:, 0] != lab[:, 2])
    return at[live]


def lod_triangles(positions: np.ndarray, triangles: np.ndarray, vertex_targets: list,
                  uvs: np.ndarray | None = None,
                  normals: np.ndarray | None = None) -> list | None:
    """For each of ``vertex_targets`` (None: the input), the (T', 3) triangles of
    the nested level with at most that many vertices in use; None without the
    compiled simplifier, or when its order stops short of a level (it leaves a
    small or border-heavy mesh early): the caller then replays a progressive
    mesh, whose greedy tail goes on to nothing."""
    pos = np.asarray(positions, np.float64)
    tris = np.asarray(triangles, np.int64).reshape(-1, 3)
    label = lexicographic_labels(pos)[1].reshape(-1)
    schedule = compiled_schedule(pos, tris, label)
    if schedule is None:
        return None
    n_pos = int(label.max()) + 1 if len(label) else 0
    pairs = accepted_collapses(schedule, n_pos)
    parts = [np.asarray(a, np.float64).reshape(len(pos), -1) for a in (uvs,) if a is not None]
    if normals is not None:
        parts.append(np.sqrt(NORMAL_WEIGHT) * np.asarray(normals, np.float64).reshape(len(pos), -1))
    copies = _Copies(label, np.concatenate(parts, axis=1) if parts else None)
    used_v = _vertices_used(tris, copies)
    used_p = int(np.count_nonzero(np.bincount(label[tris].reshape(-1), minlength=n_pos))) or 1
    per_position = used_v / used_p           # copies per position, for a first guess
    out, k = [], 0
    for target in vertex_targets:
        if target is None:
            out.append(tris)
            continue
        k, level = _level(tris, copies, pairs, n_pos, int(target), k,
                          int(used_p - target / per_position), per_position)
        if level is None:
            return None
        out.append(level)
    return out


def _vertices_used(level: np.ndarray, copies: _Copies) -> int:
    return int(np.count_nonzero(np.bincount(level.reshape(-1), minlength=len(copies.label))))


def _level(tris, copies, pairs, n_pos, target, floor, guess,
           per_position) -> tuple[int, np.ndarray | None]:
    """(k, triangles): the snapshot after ``k`` collapses (``k`` from ``floor``, so
    levels nest) using at most ``target`` vertices and within 1% of it, found
    from ``guess`` in steps of the vertices over or under (a vertex count falls
    about ``per_position`` per collapse); (k, None) when all of them leave more."""
    lo, hi = floor, len(pairs)        # the answer lies in [lo, hi]
    k = min(max(guess, lo), hi)
    best_k, best = None, None
    for _ in range(SEARCH_ROUNDS):
        level = snapshot(tris, copies, roots(pairs[:k], n_pos))
        used = _vertices_used(level, copies)
        if used <= target:
            best_k, best, hi = k, level, k
            if used >= 0.99 * target or k == lo:
                break
            k = max(lo, k - int(np.ceil((target - used) / per_position)))
        else:
            lo = k + 1
            if lo > hi:
                break
            k = min(hi, k + int(np.ceil((used - target) / per_position)))
    if best is None:                  # (then hi is every collapse: do they reach it?)
        level = snapshot(tris, copies, roots(pairs[:hi], n_pos))
        used = _vertices_used(level, copies)
        best_k, best = hi, (level if used <= target else None)
    return best_k, best
