"""Progressive mesh generation for ``.n3pmesh`` (and skin LODs), as the N3 engine
replays it.

The engine (``CN3PMeshInstance``) stores the *lowest* detail index buffer and a
list of collapse records; reaching more detail means "splitting" the records in
file order: ``numIndices += indicesToLose``, ``numVertices += verticesToLose``
and every index position listed in ``indexChanges[offset:offset+count]`` is set
to ``numVertices - 1``.  Going down, the same positions are set back to
``collapseTo``.  For that to work the generator (the engine's own tool is
``CN3PMeshCreate``) keeps three invariants, reproduced here:

* the vertex removed by a collapse goes to the end of the live vertex
  range, so it is the last vertex restored by its split; vertices left
  unreferenced by the collapse go just below it;
* triangles that degenerate go to the end of the live index range, so
  a split restores them by growing the range;
* index changes name index-buffer positions in the final slot order.

The edge choice is a quadric error metric (Garland-Heckbert) on half-edge
collapses (vertices never move: the file has one vertex buffer), with planes
along open edges so borders and UV seams hold, a penalty for flipped faces,
and, given UVs, each face's plane in position + UV space (Garland-Heckbert
1998): a collapse costs what it does to the texture, nothing where the UV map
is linear over the faces it changes, so the levels keep the vertices where a
texture bends or a chart ends.
The unit of a collapse is a *position*: the vertices at one place (split by UVs
or normals: a seam's two sides, a pole's fan of corners) are costed together,
one quadric for all their faces, and collapse together, each copy onto the
copy of the target position it shares a face with (its side of the seam), or,
when it shares none, onto the target (with UVs: the copy whose UVs its quadric
prefers), so no level opens a crack.  This
is the engine's own same-position rule taken whole.  The engine's tool flags
a record ``shouldCollapse`` when the collapse made right after it added no cost
(its same-position follow-ups); here exactly the follow-ups are flagged, so
the engine never stops inside a position's collapse, while flat regions (zero
quadric error) still stop anywhere.
Collapses continue until no triangle is left, as the engine's tool does.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

import numpy as np

from ...scene.geometry import lexicographic_labels
from .quadrics import attribute_quadrics, border_quadrics, plane_quadric_rows, sum_into, sum_upper
from .wire import record_columns, record_table

ATTRIBUTE_WEIGHT = 0.1  #: weight of the attribute quadrics (UVs in the mesh's scale) to face planes
FLIP_PENALTY = 1e3      #: added cost (times the mesh scale squared) for a flipped face
#: changed vertices gathered before their costs are recomputed in one batch: at
#: most ``REFRESH_BATCH``, and one per 2**``REFRESH_SHARE`` live vertices; one
#: below ``GREEDY_BELOW`` live vertices, so a small mesh stays strictly greedy.
#: Until then they sit out, so the collapses between two batches spread over the
#: mesh (an independent set, as parallel simplifiers take) and numpy's per-call
#: cost is paid once per batch instead of once per collapse
REFRESH_BATCH = 64
REFRESH_SHARE = 3
GREEDY_BELOW = 64
#: rows of attribute quadrics evaluated per batch in ``_candidates``
QA_CHUNK = 4096
#: a vertex with at least this many (pair, copy) rows has them computed as a grid
QA_GRID = 4096
#: after a collapse, queue fresh costs only for the positions whose queued
#: choice it can have changed (False: for every neighbour of the kept vertex,
#: the tests' control, which chooses the same collapses with more work)
REQUEUE_CHANGED_ONLY = True


@dataclass
class Progressive:
    """A progressive mesh in the file's terms (vertex order already final)."""

    order: np.ndarray            #: (V,) original vertex index at each final position
    indices: np.ndarray          #: (3T,) index buffer, lowest detail first region
    collapses: np.ndarray        #: file-order records (a table of the layout's collapse)
    index_changes: np.ndarray    #: (C,) int32 index-buffer positions
    min_vertices: int
    min_indices: int


class _Mesh:
    """Mutable connectivity for the collapse loop (vertex ids are input indices),
    with what stays fixed: each vertex's position ``label`` and the ``groups`` of
    vertices at each position, and the ``attributes`` (UVs) with their quadrics."""

    def __init__(self, pos: np.ndarray, tris: np.ndarray, label: np.ndarray,
                 groups: list[list[int]], attributes: np.ndarray | None) -> None:
        self.pos = pos
        self.label = label
        self.groups = groups
        self.attributes = attributes
        #: per vertex (copy), its faces' quadrics in position + attribute space;
        #: a copy's goes to the copy it collapses onto
        self.attr_q = None if attributes is None else attribute_quadrics(pos, attributes, tris)
        self.tris = tris.copy()
        self.corners: list[list[int]] = tris.tolist()    # the same, for Python-side walks
        # each vertex's faces, added in ascending face order as a loop over the
        # faces would add them (so the sets iterate alike), from one stable sort
        flat = tris.reshape(-1)
        by_vertex = np.argsort(flat, kind="stable")
        faces = (by_vertex // 3).tolist()
        ends = np.searchsorted(flat[by_vertex], np.arange(len(pos) + 1)).tolist()
        self.vert_tris: list[set] = [set(faces[s:e]) for s, e in zip(ends, ends[1:])]

    def neighbours(self, v: int) -> set:
        out: set = set()
        corners = self.corners
        for t in self.vert_tris[v]:
            out.update(corners[t])
        out.discard(v)
        return out


def _distinct(keys: np.ndarray) -> np.ndarray:
    """``np.unique(keys)`` for a 1-D integer array, without its wrapper's cost
    (it is called once per refresh batch, on a few hundred keys)."""
    k = np.sort(keys)
    return k[np.concatenate(([True], k[1:] != k[:-1]))] if len(k) else k


def _first_and_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_index=True, return_inverse=True)[1:]``: where
    each distinct key first occurs, and each key's distinct index."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    new = np.concatenate(([True], k[1:] != k[:-1])) if len(k) else np.zeros(0, bool)
    inverse = np.empty(len(keys), np.int64)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cross product over the last axis (np.cross is slow on many tiny arrays)."""
    return np.stack([u[..., 1] * v[..., 2] - u[..., 2] * v[..., 1],
                     u[..., 2] * v[..., 0] - u[..., 0] * v[..., 2],
                     u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]], axis=-1)


def _candidates(m: _Mesh, q: np.ndarray, vs: list, scale2: float) -> list[tuple[float, int, int]]:
    """``(cost, a, b)``: the cheapest collapse of the position of each vertex
    ``a`` of ``vs`` (in ``vs`` order) onto the position of one of its
    neighbours ``b`` (the lowest on a tie).  A position is all the vertices at
    it (``m.label``, ``m.groups``), which collapse together: its faces are all
    its copies' faces, and ``q`` holds one quadric per position.  The cost is the
    quadric error of the combined quadric at ``b``'s position, plus a penalty
    when a kept face flips, plus each copy's attribute quadric at the copy of
    ``b``'s position it goes to (its UVs with ``b``'s place): what the collapse
    does to the texture, nothing where the UV map is linear over the faces,
    much where a copy takes another chart's UVs.  One entry per position is
    enough: a pair's cost changes only when its ``a``'s faces or ``b``'s
    quadric do, and both put ``a`` among the recomputed.  One batch of array
    operations for all of them (neighbours included): per-vertex numpy calls
    on arrays of a few rows cost more than the arithmetic."""
    label, groups = m.label, m.groups
    verts: list[int] = []
    face_flat: list[int] = []
    face_count: list[int] = []
    vert_tris = m.vert_tris
    for a in vs:
        copies = groups[label[a]]
        faces = vert_tris[a] if len(copies) == 1 else set().union(*(vert_tris[c] for c in copies))
        if faces:
            verts.append(a)
            face_flat.extend(faces)
            face_count.append(len(faces))
    if not verts:
        return []
    V = np.array(verts, dtype=np.int64)
    nf = np.array(face_count, dtype=np.int64)
    faces_i = np.array(face_flat, dtype=np.int64)           # one row per (vertex, face)
    slot_i = np.repeat(np.arange(len(V)), nf)
    # neighbours: the other corners of a vertex's faces, once each, ascending
    corner = m.tris[faces_i].reshape(-1)
    slot_c = np.repeat(slot_i, 3)
    Vl = label[V]
    other = label[corner] != Vl[slot_c]
    n_all = len(m.pos)
    key = _distinct(slot_c[other] * n_all + corner[other])
    pair_slot, B = np.divmod(key, n_all)
    k = np.bincount(pair_slot, minlength=len(V))
    A = V[pair_slot]
    # one row per (pair, face of its a): the pair's faces are its vertex's faces
    rows_of_pair = nf[pair_slot]
    face_start = (np.cumsum(nf) - nf)[pair_slot]
    rp = np.repeat(np.arange(len(B)), rows_of_pair)
    local = np.arange(len(rp)) - np.repeat(np.cumsum(rows_of_pair) - rows_of_pair, rows_of_pair)
    row_inc = np.repeat(face_start, rows_of_pair) + local
    targets = m.pos[B]                                           # (k, 3)
    h = np.concatenate([targets, np.ones((len(B), 1))], axis=1)
    cost = np.einsum("ki,kij,kj->k", h, q[label[A]] + q[label[B]], h)
    # flip test per (vertex, face), relative to the vertex a (the face's copy of
    # it): with u, w the face's other corners in winding order, the face's normal
    # is n = u x w, after moving a to t it is (u - t) x (w - t), and their dot
    # product is |n|^2 + t . ((u - w) x n): two numbers per face, one dot product
    # per row; what rounding leaves of a face moved onto a line counts as flipped
    c3 = m.tris[faces_i]
    at = np.argmax(label[c3] == Vl[slot_i][:, None], axis=1)
    inc = np.arange(len(faces_i))
    u_i, w_i = c3[inc, (at + 1) % 3], c3[inc, (at + 2) % 3]
    origin = m.pos[V][slot_i]
    pu, pw = m.pos[u_i] - origin, m.pos[w_i] - origin
    normal = _cross(pu, pw)
    nsq = np.einsum("ij,ij->i", normal, normal)
    lever = _cross(pu - pw, normal)
    moved = (targets - m.pos[A])[rp]
    turn = nsq[row_inc] + np.einsum("rj,rj->r", moved, lever[row_inc])
    b_row = label[B][rp]
    keep = (label[u_i[row_inc]] != b_row) & (label[w_i[row_inc]] != b_row)   # faces that stay
    flip_rows = (turn <= 1e-9 * nsq[row_inc]) & keep            # flipped, or flattened to a line
    flips = np.bincount(rp[flip_rows], minlength=len(B)) > 0
    cost = cost + np.where(flips, FLIP_PENALTY * scale2, 0.0)
    if m.attributes is not None and len(rp):
        # each copy of a's position goes onto the first copy of b's it shares a
        # face with (build_progressive), else onto the one its quadric prefers,
        # here priced at b: its attribute quadric at that copy's values.
        # One entry per (pair, copy of a), pair by pair, copies ascending; every
        # pair of a vertex has that vertex's copies, so they are found once per
        # vertex (over its faces) and repeated per pair
        copy_f = c3[inc, at]                                    # per (vertex, face)
        ufirst, uinv = _first_and_inverse(slot_i * n_all + copy_f)
        nu = np.bincount(slot_i[ufirst], minlength=len(V))       # copies per vertex
        u_start = np.cumsum(nu) - nu
        nu_p = nu[pair_slot]                                     # copies per pair
        p_start = np.cumsum(nu_p) - nu_p
        pair_of = np.repeat(np.arange(len(B)), nu_p)             # per (pair, copy)
        local_u = np.arange(len(pair_of)) - np.repeat(p_start, nu_p)
        u_of = np.repeat(u_start[pair_slot], nu_p) + local_u     # its (vertex, copy)
        copy_u = copy_f[ufirst[u_of]]
        dies = np.flatnonzero(~keep)
        rows_d = row_inc[dies]
        per_copy = p_start[rp[dies]] + uinv[rows_d] - u_start[pair_slot[rp[dies]]]
        cd = c3[rows_d]
        at_b = np.argmax(label[cd] == b_row[dies][:, None], axis=1)
        partner = np.full(len(pair_of), n_all, np.int64)
        np.minimum.at(partner, per_copy, cd[np.arange(len(cd)), at_b])
        partner = np.where(partner == n_all, B[pair_of], partner)
        qa = np.empty(len(pair_of))
        todo = np.ones(len(pair_of), bool)
        # a vertex with many pairs and copies (a pole's fan: hundreds of each) as
        # its (pair, copy) grid, the pairs' rows (at b, b's own attributes) against
        # its copies' quadrics, summed term by term as the einsum below sums each
        # row (i-major, (h_i q_ij) h_j, from zero), so the values are the same
        # without gathering a quadric per row; the copies whose partner is not b
        # are done with the rest
        n_pairs = np.bincount(pair_slot, minlength=len(V))
        for s in np.flatnonzero(n_pairs * nu >= QA_GRID).tolist():
            p0 = int(np.searchsorted(pair_slot, s))
            P, C = int(n_pairs[s]), int(nu[s])
            r0 = int(p_start[p0])
            bs = B[p0:p0 + P]
            hp = np.concatenate([targets[p0:p0 + P], m.attributes[bs], np.ones((P, 1))], axis=1)
            qc = m.attr_q[copy_f[ufirst[u_start[s]:u_start[s] + C]]]
            acc = np.zeros((P, C))
            for i in range(hp.shape[1]):
                for j in range(hp.shape[1]):
                    acc += (hp[:, i, None] * qc[None, :, i, j]) * hp[:, j, None]
            qa[r0:r0 + P * C] = acc.reshape(-1)
            todo[r0:r0 + P * C] = (partner[r0:r0 + P * C] != np.repeat(bs, C))
        rest = np.flatnonzero(todo)
        for lo in range(0, len(rest), QA_CHUNK):    # (cache-sized gathers)
            sl = rest[lo:lo + QA_CHUNK]
            h = np.concatenate([targets[pair_of[sl]], m.attributes[partner[sl]],
                                np.ones((len(sl), 1))], axis=1)
            qa[sl] = np.einsum("ki,kij,kj->k", h, m.attr_q[copy_u[sl]], h)
        cost = cost + np.bincount(pair_of, weights=qa, minlength=len(B)) * ATTRIBUTE_WEIGHT
    cost = np.maximum(cost, 0.0)
    # each vertex's cheapest target (the first neighbour on a tie)
    has = k > 0
    k = k[has]
    start = np.cumsum(k) - k
    best = np.minimum.reduceat(cost, start)
    hit = np.flatnonzero(cost == np.repeat(best, k))
    first = hit[np.searchsorted(hit, start)]
    return list(zip(best.tolist(), V[has].tolist(), B[first].tolist()))


def build_progressive(positions: np.ndarray, triangles: np.ndarray,
                      coincident: np.ndarray | None = None,
                      attributes: np.ndarray | None = None,
                      order: str = "python") -> Progressive:
    """Collapse ``triangles`` (T, 3) over ``positions`` (V, 3) down to nothing and
    lay the result out as the engine expects.  ``coincident`` (V,) labels
    vertices at the same position (collapsed together); default: by position.
    A triangle with all three corners at one position cannot collapse (the
    importer drops triangles degenerate by position first).  ``attributes``
    (V, k), the UVs, add their quadrics: a collapse then costs what it does to
    the texture map too (none given: geometry alone decides).

    ``order``: ``"python"`` (the reference: every collapse chosen here, by the
    quadrics above) or ``"compiled"``: the collapse order of the compiled
    quadric simplifier (:func:`compiled_schedule`), replayed position by
    position with the same bookkeeping and seam rule, then the greedy choice
    for whatever it left (falls back to ``"python"`` without the package)."""
    pos = np.asarray(positions, np.float64)
    tris = np.asarray(triangles, np.int64).reshape(-1, 3)
    nv_total = len(pos)
    # dense position labels 0..P-1, from the positions or the caller's labels
    label = (lexicographic_labels(pos)[1] if coincident is None else
             np.unique(np.asarray(coincident).reshape(-1), return_inverse=True)[1].reshape(-1))
    # the vertices at each position, ascending (one stable sort, then slices)
    by_label = np.argsort(label, kind="stable").tolist()
    bounds = np.searchsorted(label[by_label] if len(label) else label,
                             np.arange(int(label.max()) + 2 if len(label) else 1)).tolist()
    groups: list[list[int]] = [by_label[s:e] for s, e in zip(bounds, bounds[1:])]
    face_rows, face_n = plane_quadric_rows(pos, tris)
    q_vertex = sum_upper(nv_total, tris.T.reshape(-1), np.tile(face_rows, 3), 4)
    q_vertex += border_quadrics(pos, tris, face_n, label)
    q = sum_into(len(groups), label, q_vertex)     # one quadric per position
    ext = np.ptp(pos, axis=0).max() if len(pos) else 1.0
    scale2 = float(ext * ext) or 1.0

    attrs = None if attributes is None else np.asarray(attributes, np.float64).reshape(nv_total, -1)
    if attrs is not None:       # in the mesh's scale: a texture spans the mesh
        attrs = attrs * np.sqrt(scale2)
    m = _Mesh(pos, tris, label, groups, attrs)
    # --- engine bookkeeping state -------------------------------------------------
    # (Python lists: the loop reads and writes single items, which numpy does slowly)
    lab = label.tolist()                    # vertex id -> position label
    # Where things end up follows from the order they die in: a removed vertex
    # takes the last live place and is never moved again, so the i-th vertex
    # to go sits at V-1-i; the same for triangles and index slots.  Only those
    # orders are kept here, and the places are worked out once at the end.
    vertex_deaths: list[int] = []           # vertex ids in the order they leave
    triangle_deaths: list[int] = []         # triangle ids in the order they die
    refcount = np.bincount(tris.reshape(-1), minlength=nv_total).tolist()
    records: list[int] = []                 # creation order, six columns per record
    # (flat lists of ints: a tuple per change or record would be a million small
    # containers for the cyclic collector to scan on a big mesh)
    changes: list[int] = []                 # 3 * triangle id + corner

    # vertices no triangle uses never take part (the caller welds them away)
    vertex_deaths.extend(v for v in range(nv_total - 1, -1, -1) if refcount[v] == 0)

    version = np.zeros(len(groups), np.int64)      # per position
    alive_v = [r > 0 for r in refcount]
    #: per position, the position its queued candidate collapses onto
    best_to = [-1] * len(groups)

    def representatives(vs) -> list[int]:
        """The first live copy of each position of ``vs``, once, in ``vs`` order."""
        out, seen = [], set()
        for v in vs:
            g = lab[v]
            if g not in seen:
                seen.add(g)
                rep = next((c for c in groups[g] if alive_v[c]), None)
                if rep is not None:
                    out.append(rep)
        return out

    def collapse(a: int, b: int, partner: bool = False) -> None:
        """Vertex ``a`` onto ``b`` with the engine's bookkeeping."""
        # (one call per collapse: the helpers are inlined and what it touches is
        # bound locally, as the replay of a compiled order spends most of its
        # time here)
        first_change = len(changes)
        corners, vert_tris = m.corners, m.vert_tris
        vertex_deaths.append(a)
        dying, moved = [], []
        at_b = lab[b]
        for t in sorted(vert_tris[a]):
            x, y, z = corners[t]
            if lab[x] == at_b or lab[y] == at_b or lab[z] == at_b:   # b or a copy of it
                dying.append(t)
            else:
                moved.append(t)
        touched = {b}
        if dying:
            triangle_deaths.extend(dying)
            for t in dying:
                c = corners[t]
                touched.update(c)
                for v in c:
                    vert_tris[v].discard(t)
                    refcount[v] -= 1
        if moved:
            ks = []
            for t in moved:
                c = corners[t]
                k = c.index(a)
                c[k] = b
                ks.append(k)
                changes.append(3 * t + k)
            if tracking:
                m.tris[moved, ks] = b
            vert_tris[b].update(moved)
            refcount[b] += len(moved)
        vert_tris[a] = set()        # (a is gone: its faces died or are b's now)
        alive_v[a] = False
        # vertices whose last face died leave with a, just below it
        gone = [v for v in touched if alive_v[v] and refcount[v] == 0]
        if gone:
            gone.sort()
            vertex_deaths.extend(gone)
            for v in gone:
                alive_v[v] = False
        lost = 1 + len(gone)
        n_changes = len(changes) - first_change
        # indicesToLose, indicesToChange, verticesToLose, indexChangesOffset,
        # collapseTo, partner
        records.extend((3 * len(dying), n_changes, lost, first_change if n_changes else 0,
                        b, partner))
        if not tracking:            # (a replayed order needs no fresh costs)
            return
        # Whose queued candidate may now be wrong: the vertices whose faces
        # changed (the corners of the moved and the dead faces) and b, whose
        # quadric grew.  Another neighbour of b keeps its faces, so only its
        # collapse onto b got dearer (a quadric only adds error): its queued
        # choice still stands unless that choice was b.
        around = touched
        around.add(b)
        for t in moved:
            around.update(corners[t])
        if REQUEUE_CHANGED_ONLY:
            for v in m.neighbours(b):
                if best_to[lab[v]] == at_b:
                    around.add(v)
        else:
            around |= m.neighbours(b)
        around.discard(a)
        for v in around:
            version[lab[v]] += 1
        dirty.update(around)

    def refresh() -> None:
        """New candidates of the positions recent collapses changed (one batch)."""
        # a dead vertex still names its position: its copies may live on
        vs = representatives(sorted(dirty))
        dirty.clear()
        queue(vs)

    def queue(vs: list[int]) -> None:
        """Price the collapses of the positions of ``vs`` and queue the cheapest."""
        for c, v, w in _candidates(m, q, vs, scale2):
            g = lab[v]
            best_to[g] = lab[w]
            heapq.heappush(heap, (c, next(counter), v, w, version[g]))

    # While a compiled order is replayed nothing reads the quadrics (but the
    # rare choice between copies below), so their sums wait in these lists and
    # are made in one array operation (``merge_quadrics``): two small-array
    # additions per collapse were a tenth of the replay.
    merges_q: list[int] = []        # (removed position, kept position) pairs, flat
    merges_attr: list[int] = []     # (removed vertex, kept vertex) pairs, flat

    def merge_quadrics() -> None:
        _merge_into_roots(q, merges_q)
        if attrs is not None:
            _merge_into_roots(m.attr_q, merges_attr)
        merges_q.clear()
        merges_attr.clear()

    def add_quadric(into: int, frm: int) -> None:
        if tracking:
            m.attr_q[into] += m.attr_q[frm]
        else:
            merges_attr.extend((frm, into))

    def add_position_quadric(gb: int, ga: int) -> None:
        if tracking:
            q[gb] += q[ga]
        else:
            merges_q.extend((ga, gb))

    def collapse_position(a: int, b: int) -> None:
        """Every copy of a's position onto b's (see the loop below)."""
        ga, gb = lab[a], lab[b]
        if len(groups[ga]) == 1 and len(groups[gb]) == 1:
            # one copy on each side (most positions): the loop below comes down to this
            if alive_v[a] and alive_v[b] and not m.vert_tris[a].isdisjoint(m.vert_tris[b]):
                if attrs is not None:
                    add_quadric(b, a)
                collapse(a, b)
                add_position_quadric(gb, ga)
            return
        # every copy of a's position goes to a live copy of b's position it shares
        # a face with (keeping its side of a seam), else onto b, or another copy
        # of it should b have died: the position collapses whole, so no stopping
        # point leaves a crack.  Adjacent copies go first, so the targets of
        # the others have gained faces (and stay alive) by then
        pending = [c for c in groups[ga] if alive_v[c]]
        done = 0
        while pending:
            pending = [c for c in pending if alive_v[c]]      # a copy can lose its faces
            targets = [t for t in groups[gb] if alive_v[t]]
            if not (pending and targets):
                break
            pick = None
            vert_tris = m.vert_tris
            for i, c in enumerate(pending):
                faces = vert_tris[c]             # (neighbours: they share a face)
                pick = next(((i, t) for t in targets if not faces.isdisjoint(vert_tris[t])),
                            None)
                if pick:
                    break
            if pick is None:
                if not done:        # stale: a's position no longer borders b's
                    break
                if attrs is None:
                    pick = (0, b if alive_v[b] else targets[0])
                else:       # the copy of b's position its attribute quadric prefers
                    merge_quadrics()
                    h = np.concatenate([pos[targets], attrs[targets],
                                        np.ones((len(targets), 1))], axis=1)
                    err = np.einsum("ki,ij,kj->k", h, m.attr_q[pending[0]], h)
                    pick = (0, targets[int(np.argmin(err))])
            i, target = pick
            if attrs is not None:
                add_quadric(target, pending[i])
            collapse(pending.pop(i), target, partner=done > 0)
            done += 1
        if done:
            add_position_quadric(gb, ga)

    dirty: set = set()
    tracking = False
    schedule = compiled_schedule(pos, tris, label) if order == "compiled" else None
    if schedule is not None:
        first_live = [g[0] for g in groups]
        for ga, gb in schedule.tolist():
            a, b = first_live[ga], first_live[gb]
            if not alive_v[a]:
                a = next((c for c in groups[ga] if alive_v[c]), None)
                if a is None:
                    continue
                first_live[ga] = a
            if not alive_v[b]:
                b = next((c for c in groups[gb] if alive_v[c]), None)
                if b is None:
                    continue
                first_live[gb] = b
            collapse_position(a, b)
        merge_quadrics()
    tracking = True
    m.tris = np.array(m.corners, np.int64).reshape(-1, 3)     # (the replay kept only the lists)

    counter = itertools.count()     # ties pop in insertion order (deterministic)
    heap: list = []
    queue(representatives(np.flatnonzero(alive_v).tolist()))
    while heap or dirty:
        live_v = nv_total - len(vertex_deaths)
        batch = min(REFRESH_BATCH, live_v >> REFRESH_SHARE) if live_v >= GREEDY_BELOW else 1
        if len(dirty) >= batch or not heap:
            refresh()
            continue
        cost, _, a, b, va = heapq.heappop(heap)
        if version[lab[a]] != va:
            continue
        if alive_v[b]:
            collapse_position(a, b)

    live_t = len(tris) - len(triangle_deaths)
    if live_t:  # only a triangle with its three corners at one position stays
        raise ValueError(f"progressive mesh generation left {live_t} triangles uncollapsed "
                         "(all corners of each at one position)")

    # --- lay out in file terms ------------------------------------------------------
    # the vertices left (ascending), then the removed ones, the first removed last
    vert_at = np.concatenate([np.flatnonzero(alive_v),
                              np.asarray(vertex_deaths[::-1], np.int64)]).astype(np.int64)
    live_v = nv_total - len(vertex_deaths)
    pos_arr = np.empty(nv_total, np.int64)
    pos_arr[vert_at] = np.arange(nv_total)
    tri_at = np.asarray(triangle_deaths[::-1], np.int64)
    slot_arr = np.empty(len(tris), np.int64)
    slot_arr[tri_at] = np.arange(len(tris))
    final_tris = m.tris      # (kept in step with m.corners while tracking; dead ones as they died)
    final_idx = pos_arr[final_tris[tri_at]].reshape(-1)
    ch = np.asarray(changes, np.int64)
    change_pos = slot_arr[ch // 3] * 3 + ch % 3
    # file order is creation order reversed
    cols = np.asarray(records, np.int64).reshape(-1, 6)[::-1].T
    out = np.zeros(cols.shape[1], record_table("collapse").dtype)   # padding stays zero
    for k, name in enumerate(("indicesToLose", "indicesToChange", "verticesToLose",
                              "indexChangesOffset")):
        out[name] = cols[k]
    out["collapseTo"] = pos_arr[cols[4]]
    # a record is flagged when the one before it in file order was a partner collapse
    out["shouldCollapse"][1:] = cols[5][:-1]
    return Progressive(order=vert_at, indices=final_idx, collapses=out,
                       index_changes=change_pos.astype(np.int32), min_vertices=live_v,
                       min_indices=0)


def _merge_into_roots(quadrics: np.ndarray, merges: list[int]) -> None:
    """Add each removed entry's quadric into the entry that finally kept it:
    ``merges`` holds (removed, kept) pairs, flat, in collapse order, and a kept
    entry may itself be removed later, so each is followed to its last keeper
    (pointer jumping) and all are summed there at once.  The sums are those of
    adding them one collapse at a time, in another order."""
    if not merges:
        return
    pairs = np.asarray(merges, np.int64).reshape(-1, 2)
    removed, kept = pairs[:, 0], pairs[:, 1]
    parent = np.arange(len(quadrics))
    parent[removed] = kept
    while True:                 # halve every chain until each points at its root
        up = parent[parent]
        if np.array_equal(up, parent):
            break
        parent = up
    np.add.at(quadrics, parent[removed], quadrics[removed])


def _simplifier_pairs(points: np.ndarray, faces: np.ndarray) -> np.ndarray | None:
    """(K, 2) ``(removed, kept)`` indices of ``points`` in the order the compiled
    quadric simplifier (``fast_simplification``, Fast-Quadric-Mesh-Simplification)
    collapses ``faces`` towards nothing, or None without the package."""
    try:
        import fast_simplification
    except ImportError:
        return None
    if not len(faces):
        return np.zeros((0, 2), np.int64)
    used = np.flatnonzero(np.bincount(faces.reshape(-1), minlength=len(points)))
    remap = np.full(len(points), -1, np.int64)
    remap[used] = np.arange(len(used))
    _, _, pairs = fast_simplification.simplify(
        np.ascontiguousarray(points[used], np.float64), remap[faces].astype(np.int32),
        target_count=1, agg=7.0, return_collapses=True)
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    return used[pairs[:, ::-1]]


def compiled_schedule(pos: np.ndarray, tris: np.ndarray, label: np.ndarray) -> np.ndarray | None:
    """(K, 2) position collapses ``(removed, kept)`` in the simplifier's order
    (:func:`_simplifier_pairs`), or None without the package.  It is given the
    vertices as they are, so UV and normal seams are open edges to it, which its
    border quadrics keep until late; its vertex collapses become collapses of
    their positions (``label``)."""
    pairs = _simplifier_pairs(pos, np.asarray(tris, np.int64).reshape(-1, 3))
    if pairs is None:
        return None
    out = label[pairs]
    return out[out[:, 0] != out[:, 1]]


def replay(p: Progressive, target_vertices: int | None = None) -> tuple[int, int, np.ndarray]:
    """The engine's split replay of ``p`` (for checks): (vertices, indices, buffer).

    Records are split in file order while the vertex count stays within
    ``target_vertices`` (all of them without one), then while they are flagged
    ``shouldCollapse``; each split sets its index positions to its last vertex.
    The prefix sums give where that stops, and the positions' final values are
    each one's last write (one array operation instead of a step per record)."""
    idx = p.indices.copy()
    nv, ni = p.min_vertices, p.min_indices
    lose_i, lose_v, offset, change, keep_going = (np.asarray(c, np.int64) for c in record_columns(
        p.collapses, "collapse", "indicesToLose", "verticesToLose", "indexChangesOffset",
        "indicesToChange", "shouldCollapse"))
    count = len(lose_v)
    after = nv + np.cumsum(lose_v)                 # vertices after each split
    before = after - lose_v
    if target_vertices is None:
        k = count
    else:
        stop = np.flatnonzero((before >= target_vertices) | (after > target_vertices))
        k = int(stop[0]) if len(stop) else count
    rest = np.flatnonzero(keep_going[k:] == 0)
    k = k + int(rest[0]) if len(rest) else count
    if k:
        nv = nv + int(after[k - 1] - nv)
        ni = ni + int(lose_i[:k].sum())
        n_changes = len(p.index_changes)
        start = np.clip(offset[:k], 0, n_changes)
        length = np.clip(np.minimum(offset[:k] + change[:k], n_changes) - start, 0, None)
        total = int(length.sum())
        if total:
            first = np.cumsum(length) - length
            at = np.repeat(start - first, length) + np.arange(total)
            where = np.asarray(p.index_changes, np.int64)[at]
            value = np.repeat(after[:k] - 1, length)
            _, last = np.unique(where[::-1], return_index=True)   # each position's last write
            last = total - 1 - last
            idx[where[last]] = value[last]
    return nv, ni, idx
