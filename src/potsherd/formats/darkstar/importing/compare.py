"""Whether an imported shape model says what the original's says (``--like``), by
content, not by array layout: what an editor re-saving the glTF unedited (Blender
3.4's import and export, measured on the corpus) changes must not count, and any
real edit must.

* nodes are matched by name under their matched parent, objects by name on their
  matched node, sequences by name; a copy suffix (``.1`` of the export's unique
  names, Blender's ``.001``) matches the bare name;
* node frames: a skin joint's frame may be turned about its origin (Blender
  points bones at their children) and the skeleton's rest turned by the axis
  change once more (:func:`reframe`); everything is then compared in the
  original's frames, and every node keeps its origin;
* geometry is a multiset of triangles: each corner's positions in every mesh
  frame, texture coordinates and nearest engine normal, and the triangle's
  material, in any order and from any corner (the winding kept), within a
  tolerance scaled by the shape's extent.  A triangle without area has no normal
  to keep; of a two-sided pair (the same corners wound both ways) one may be
  missing (an editor holds one face per set of vertices);
* motion is compared as motion, not keys: each side's curve evaluated at the
  other's key times (:func:`same_track`); a clip's duration may be cut back to
  its last whole 24 fps frame before the last key.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

import numpy as np

from ....scene import decompose_matrix, quat_continuous, quat_normalize, trs_to_matrix
from ..geometry import nearest_normals
from ..model import GLTF_TO_SHAPE, NodeM, ObjectM, SequenceM, ShapeModel, base_name, sample

#: the coarsest resampling of a curve still taken as the same motion (s): 24 fps,
#: the frame rate Blender samples every animation at by default
RESAMPLE_STEP = 1.0 / 24.0 + 1e-6
TIME_EPS = 1e-4          #: key times closer than this are the same time (s)
ROT_EPS = 2e-5           #: rotation noise (rad): float32 quaternions through matrices
UV_EPS = 1e-5            #: texture coordinate noise (Blender flips v and back in float32)


def shape_extent(ref: ShapeModel) -> float:
    extent = 1.0
    for o in ref.objects:
        if o.frames.size:
            extent = max(extent, float(np.abs(o.frames).max()))
    for n in ref.nodes:
        extent = max(extent, float(np.abs(n.local[:3, 3]).max()))
    return extent


@dataclass
class Matching:
    """Model parts matched to the original's (index -> index) and the first difference."""
    nodes: dict = field(default_factory=dict)
    objects: dict = field(default_factory=dict)
    sequences: dict = field(default_factory=dict)
    why: str | None = None


_COUNT = re.compile(r"\.(\d+)$")


def _assign(names: list, groups: list, rnames: list, taken: set) -> dict:
    """Items (their ``names``, each with the original's candidate indices in
    ``groups``) matched to free candidates of the same name: exact names first,
    then the bare name of a copy suffix ``.N``, the N-th of the same-named
    candidates when free (the export numbers repeats in order), else the first."""
    out: dict = {}
    for i, (name, cands) in enumerate(zip(names, groups)):
        j = next((j for j in cands if j not in taken and rnames[j] == name), None)
        if j is not None:
            out[i] = j
            taken.add(j)
    for i, (name, cands) in enumerate(zip(names, groups)):
        if i in out:
            continue
        same = [j for j in cands if rnames[j] == base_name(name)]
        hit = _COUNT.search(name)
        nth = int(hit.group(1)) if hit else 0
        free = [j for j in same if j not in taken]
        if not free:
            continue
        j = same[nth] if nth < len(same) and same[nth] not in taken else free[0]
        out[i] = j
        taken.add(j)
    return out


def match_parts(m: ShapeModel, ref: ShapeModel) -> Matching:
    """Nodes, objects and sequences of ``m`` matched to ``ref``'s by name (see the module
    docstring); ``why`` says what has no counterpart, None when everything has one."""
    out = Matching()
    rnames = [n.name for n in ref.nodes]
    kids: dict[int, list] = {}
    for j, n in enumerate(ref.nodes):
        kids.setdefault(n.parent, []).append(j)
    depth = [_depth(m, i) for i in range(len(m.nodes))]
    taken: set = set()
    for d in range(max(depth, default=-1) + 1):
        level = [i for i in range(len(m.nodes)) if depth[i] == d]
        parents = [-1 if m.nodes[i].parent < 0 else out.nodes.get(m.nodes[i].parent) for i in level]
        # under a node with no counterpart (an edit): any of the original's, by name
        every = list(range(len(ref.nodes)))
        got = _assign([m.nodes[i].name for i in level],
                      [kids.get(p, []) if p is not None else every for p in parents], rnames, taken)
        out.nodes.update({level[k]: j for k, j in got.items()})
    lost = [n.name for i, n in enumerate(m.nodes) if i not in out.nodes]
    gone = [ref.nodes[j].name for j in range(len(ref.nodes)) if j not in taken]
    if lost or gone:
        out.why = (f"node tree: {lost[0]!r} is not in the original" if lost
                   else f"node tree: {gone[0]!r} is gone")
    onames = [o.name for o in ref.objects]
    on_node: dict = {}
    for j, r in enumerate(ref.objects):
        on_node.setdefault(r.node, []).append(j)
    taken = set()
    every = list(range(len(ref.objects)))
    out.objects = _assign([o.name for o in m.objects],
                          [on_node.get(out.nodes[o.node], []) if o.node in out.nodes else every
                           for o in m.objects], onames, taken)
    lost = [o.name for i, o in enumerate(m.objects) if i not in out.objects]
    gone = [ref.objects[j].name for j in range(len(ref.objects)) if j not in taken]
    if out.why is None and (lost or gone):
        out.why = (f"objects: {lost[0]!r} is not in the original" if lost
                   else f"objects: {gone[0]!r} is gone")
    snames = [sq.name for sq in ref.sequences]
    taken = set()
    every = list(range(len(snames)))
    out.sequences = _assign([sq.name for sq in m.sequences], [every] * len(m.sequences), snames, taken)
    lost = [sq.name for i, sq in enumerate(m.sequences) if i not in out.sequences]
    gone = [snames[j] for j in every if j not in taken]
    if out.why is None and (lost or gone):
        out.why = (f"sequences: {lost[0]!r} is not in the original" if lost
                   else f"sequences: {gone[0]!r} is gone")
    return out


def _depth(m: ShapeModel, i: int) -> int:
    d = 0
    while m.nodes[i].parent >= 0 and d <= len(m.nodes):
        i = m.nodes[i].parent
        d += 1
    return d


# ---------------------------------------------------------------------------
# transforms and geometry


def same_transform(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    """4x4 transforms alike: translation within ``tol``, the linear part within 1e-5."""
    return bool(np.abs(a[:3, 3] - b[:3, 3]).max() <= tol and np.abs(a[:3, :3] - b[:3, :3]).max() <= 1e-5)


def material_key(model: ShapeModel, index: int) -> tuple:
    """What a triangle's material says: name, alpha mode and colour (None: no material)."""
    if not 0 <= index < len(model.materials):
        return ("", "OPAQUE", (1.0, 1.0, 1.0, 1.0))
    mat = model.materials[index]
    return (mat.name or "", mat.alpha_mode or "OPAQUE",
            tuple(round(float(c), 3) for c in (mat.base_color or (1.0, 1.0, 1.0, 1.0))))


def _corner_rows(o: ObjectM, tol: float) -> np.ndarray:
    """Per corner: positions in every frame, texture coordinates and the index of the
    nearest of the engine's normals (what a shape stores: the exact normal is noise).
    A triangle without area (in every frame) draws nothing and has no normal to keep
    (Blender makes up its corners' normals): its corners' normal is -1."""
    c = o.frames.shape[1]
    tri = o.frames.reshape(o.frames.shape[0], -1, 3, 3)
    e1, e2 = tri[:, :, 1] - tri[:, :, 0], tri[:, :, 2] - tri[:, :, 0]
    twice_area = np.linalg.norm(np.cross(e1, e2), axis=-1)
    longest = np.maximum(np.linalg.norm(e1, axis=-1), np.linalg.norm(e2, axis=-1))
    flat = (twice_area <= tol * np.maximum(longest, tol)).all(axis=0)      # height <= tol
    normal = np.where(np.repeat(flat, 3), -1, nearest_normals(o.normals.reshape(c, 3)))
    return np.concatenate([o.frames.transpose(1, 0, 2).reshape(c, -1), o.uvs.reshape(c, 2),
                           normal[:, None]], axis=1).astype(np.float64)


def _snap(rows: np.ndarray, table: np.ndarray, tol: np.ndarray) -> np.ndarray | None:
    """Index of the ``table`` row within ``tol`` (per column) of each row, or None when a
    row has none.  Candidates are found by a grid over the first three columns."""
    cell = max(float(tol[0]), 1e-12)
    keys = np.floor(table[:, :3] / cell).astype(np.int64)
    grid: dict = {}
    for j, k in enumerate(map(tuple, keys.tolist())):
        grid.setdefault(k, []).append(j)
    out = np.empty(len(rows), np.int64)
    own = np.floor(rows[:, :3] / cell).astype(np.int64)
    offsets = [(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)]
    for i, (x, y, z) in enumerate(own.tolist()):
        cand = [j for dx, dy, dz in offsets for j in grid.get((x + dx, y + dy, z + dz), ())]
        if not cand:
            return None
        worst = (np.abs(table[cand] - rows[i]) / tol).max(axis=1)
        near = [j for j, w in zip(cand, worst.tolist()) if w <= 1.0]
        if not near:
            return None
        out[i] = min(near)             # rows within tol of each other are one
    return out


def _canonical(tri: np.ndarray, mats: np.ndarray) -> np.ndarray:
    """Triangles (T, 3) of vertex ids turned to start at their smallest id (the winding
    kept), with their material column, sorted."""
    if not len(tri):
        return np.zeros((0, 4), np.int64)
    k = np.argmin(tri, axis=1)
    idx = (k[:, None] + np.arange(3)[None, :]) % 3
    rolled = np.take_along_axis(tri, idx, axis=1)
    rows = np.concatenate([rolled, mats[:, None]], axis=1)
    return rows[np.lexsort(rows.T[::-1])]


def same_geometry(o: ObjectM, om: ShapeModel, r: ObjectM, rm: ShapeModel, tol: float) -> bool:
    """The same triangles (see the module docstring)."""
    if o.frames.shape[0] != r.frames.shape[0] or o.frames.shape[1] > r.frames.shape[1]:
        return False
    if not r.frames.size or not o.frames.size:
        return not r.frames.size and not o.frames.size
    nf = r.frames.shape[0]
    cols = np.concatenate([np.full(3 * nf, tol), np.full(2, UV_EPS), [0.5]])
    mine, theirs = _corner_rows(o, tol), _corner_rows(r, tol)
    table, rid = np.unique(theirs, axis=0, return_inverse=True)
    same = _snap(table, table, cols)           # original vertices within tol are one vertex
    rid = same[rid.reshape(-1)]
    rows, mid = np.unique(mine, axis=0, return_inverse=True)
    snapped = _snap(rows, table, cols)
    if snapped is None:
        return False
    snapped = same[snapped]
    keys: dict = {}
    mat_o = np.array([keys.setdefault(material_key(om, int(x)), len(keys)) for x in o.materials], np.int64)
    mat_r = np.array([keys.setdefault(material_key(rm, int(x)), len(keys)) for x in r.materials], np.int64)
    a = _canonical(snapped[mid.reshape(-1)].reshape(-1, 3), mat_o)
    b = _canonical(rid.reshape(-1, 3), mat_r)
    if a.shape == b.shape and np.array_equal(a, b):
        return True
    # a two-sided face is two triangles on the same corners, one reversed: an editor
    # holding one face per set of vertices (Blender) keeps one of them
    mine_set = set(map(tuple, a.tolist()))
    theirs_set = set(map(tuple, b.tolist()))
    if not mine_set <= theirs_set:
        return False
    corner = _snap(table[:, :-1], table[:, :-1], cols[:-1])      # the corner without its normal
    kept = {_back(corner, t) for t in mine_set}
    return all(_back(corner, t, reverse=True) in kept for t in theirs_set - mine_set)


def _back(corner: np.ndarray, tri: tuple, reverse: bool = False) -> tuple:
    """A canonical triangle row by its corners' positions and texture coordinates only,
    wound the other way when ``reverse``."""
    v = [int(corner[x]) for x in tri[:3]]
    if reverse:
        v = [v[0], v[2], v[1]]
    k = v.index(min(v))
    return (*(v[k:] + v[:k]), tri[3])


# ---------------------------------------------------------------------------
# motion


def node_track_pairs(a, b, match, m: ShapeModel, ref: ShapeModel):
    """(i, j, key track of a or None, of b or None, a's track, b's track) for each
    matched node keyed in either clip; a clip that does not key a node holds its rest."""
    for i, j in match.nodes.items():
        ka, kb = a.node_keys.get(i), b.node_keys.get(j)
        if ka is None and kb is None:
            continue
        yield (i, j, ka, kb, ka if ka is not None else rest_track(m.nodes[i].local),
               kb if kb is not None else rest_track(ref.nodes[j].local))


def rest_track(local: np.ndarray) -> tuple:
    t, q, s = decompose_matrix(local)
    return np.zeros(1), q[None], t[None], s[None]


def _eval(track: tuple, at: np.ndarray) -> tuple:
    times, q, p, s = track
    return (quat_normalize(sample(times, q, "LINEAR", at, rotation=True)),
            sample(times, p, "LINEAR", at), sample(times, s, "LINEAR", at))


def _angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dot = np.clip(np.abs((quat_normalize(a) * quat_normalize(b)).sum(axis=-1)), 0.0, 1.0)
    return 2 * np.arccos(dot)


def _devs(x: tuple, y: tuple) -> np.ndarray:
    """(K, 3): rotation angle, translation distance, scale difference."""
    return np.stack([_angle(x[0], y[0]), np.linalg.norm(x[1] - y[1], axis=1),
                     np.abs(x[2] - y[2]).max(axis=1)], axis=1)


def _resample_slack(grid: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per time in ``at``: whether a curve resampled on ``grid`` (sorted) may miss it: it
    lies in a grid interval at most RESAMPLE_STEP long, or at most that far past the
    grid's end (a clip cut at its last whole frame)."""
    if not len(grid):
        return np.zeros(len(at), bool)
    i = np.searchsorted(grid, at, side="right")
    on = np.abs(grid[np.clip(i - 1, 0, len(grid) - 1)] - at) <= TIME_EPS
    inside = (i > 0) & (i < len(grid))
    span = np.where(inside, grid[np.clip(i, 0, len(grid) - 1)] - grid[np.clip(i - 1, 0, len(grid) - 1)],
                    np.inf)
    past = (i == len(grid)) & (at - grid[-1] <= RESAMPLE_STEP)
    return on | (inside & (span <= RESAMPLE_STEP)) | past


def same_track(new: tuple, orig: tuple, tol: float, resampled: bool = True) -> bool:
    """Node motion alike.  Each track is (times, rotation, translation, scale); a node
    without keys is its rest pose as one key (``resampled`` False: ``new`` is such
    a pose, not a curve that may have been resampled).

    A resampling samples the original: the new curve must pass through it at the
    new key times (a rotation may also be the component-wise lerp of the original's
    keys instead of their slerp: Blender's quaternion curves).  At the original's
    key times the new curve may miss the original by the chord error, what
    re-interpolating the original on the new key times gives there (plus the
    slerp/lerp gap at the chord's ends): exactly what resampling the same curve
    loses, allowed where the new keys are at most :data:`RESAMPLE_STEP` apart or the
    original's key lies less than that past the new curve's end (a clip cut at
    its last whole frame); elsewhere only noise.  An edited key moves the samples
    around it off the original, a moved key time too."""
    eps = np.array([ROT_EPS, tol, 1e-5])
    tn, to = np.asarray(new[0], np.float64), np.asarray(orig[0], np.float64)
    # the new keys lie on the original curve (slerp, or a component-wise lerp)
    o_at_n = _eval(orig, tn)
    slack = np.zeros((len(tn), 3))
    slack[:, 0] = _angle(o_at_n[0], quat_normalize(sample(orig[0], orig[1], "LINEAR", tn)))
    if (_devs(_eval(new, tn), o_at_n) > eps + slack).any():
        return False
    # at the original keys: the original, or what re-interpolating it on the new keys gives
    o_at_o = _eval(orig, to)
    dev = _devs(_eval(new, to), o_at_o)
    allow = np.zeros_like(dev)
    if resampled:
        # the chord, plus the slerp/lerp gap its new ends may carry
        chord = _devs(_eval((tn, *o_at_n), to), o_at_o)
        i = np.searchsorted(tn, to, side="right")
        ends = np.maximum(slack[np.clip(i - 1, 0, len(tn) - 1)], slack[np.clip(i, 0, len(tn) - 1)])
        allow = np.where(_resample_slack(tn, to)[:, None], chord + ends, 0.0)
    return not (dev > eps + allow + 1e-12).any()


def _step(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """(len(at), 2): the stepped value just after and just before each time (TIME_EPS)."""
    i = np.clip(np.searchsorted(times, at + TIME_EPS, side="right") - 1, 0, len(times) - 1)
    j = np.clip(np.searchsorted(times, at - TIME_EPS, side="right") - 1, 0, len(times) - 1)
    return np.stack([values[i], values[j]], axis=1)


def _meet(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row: whether the candidate values of ``a`` and ``b`` (K, 2) share one."""
    return (a[:, :, None] == b[:, None, :]).any(axis=(1, 2))


def same_steps(new: tuple, orig: tuple, resampled: bool = True) -> bool:
    """Stepped key values (mesh frames, visibility) alike: the rule of
    :func:`same_track` with values equal or not, keys within TIME_EPS of a change
    taking either side."""
    (tn, vn), (to, vo) = new, orig
    if not _meet(_step(tn, vn, tn), _step(to, vo, tn)).all():
        return False
    at_o = _step(tn, vn, to)
    ok = _meet(at_o, _step(to, vo, to))
    if resampled:
        again = _step(tn, _step(to, vo, tn)[:, 0], to)
        ok |= _resample_slack(tn, to) & _meet(at_o, again)
    return bool(ok.all())


def object_steps(keys: tuple | None, which: int) -> tuple | None:
    """(times, values) of an object's mesh frames (which=1) or visibility (2), None
    without such keys (frame 0, visible)."""
    if keys is None or keys[which] is None:
        return None
    return np.asarray(keys[0], np.float64), np.asarray(keys[which]).astype(np.int64)


def same_sequence(a: SequenceM, b: SequenceM, m: ShapeModel, ref: ShapeModel, match: Matching,
                  tol: float) -> str | None:
    """None when sequence ``a`` of ``m`` moves what ``b`` of ``ref`` moves, as it does."""
    # a glTF clip ends at its last key (the duration is in extras an editor drops), and a
    # resampled one at the last whole frame before it
    ends = [float(k[0][-1]) for k in list(b.node_keys.values()) + list(b.object_keys.values())
            if len(k[0])]
    last = max(ends) if ends else b.duration
    if not (min(last, b.duration) - RESAMPLE_STEP - 1e-6 <= a.duration <= b.duration + 1e-5):
        return f"sequence {b.name!r} duration"
    for i, j, ka, _, new, orig in node_track_pairs(a, b, match, m, ref):
        if not same_track(new, orig, tol, ka is not None):
            return f"sequence {b.name!r} node {ref.nodes[j].name!r}"
    for i, j in match.objects.items():
        if not same_object_keys(a.object_keys.get(i), b.object_keys.get(j)):
            return f"sequence {b.name!r} object {ref.objects[j].name!r}"
    return None


def same_object_keys(new: tuple | None, orig: tuple | None) -> bool:
    """An object's mesh frame and visibility keys alike (:func:`same_steps`); no keys:
    frame 0, visible."""
    for which, default in ((1, 0), (2, 1)):
        sa, sb = object_steps(new, which), object_steps(orig, which)
        if sa is None and sb is None:
            continue
        rest = (np.zeros(1), np.array([default], np.int64))
        if not same_steps(sa or rest, sb or rest, sa is not None):
            return False
    return True


# ---------------------------------------------------------------------------
# joint frames


def _worlds(model: ShapeModel) -> list:
    out: list = []
    for n in model.nodes:                      # parents before children
        out.append(n.local if n.parent < 0 else out[n.parent] @ n.local)
    return out


def _rotation_only(c: np.ndarray, tol: float, free: bool) -> bool:
    """``c`` turns a frame about its origin (a rotation, no translation), and only
    the identity unless ``free``."""
    lin = c[:3, :3]
    if np.abs(c[:3, 3]).max() > tol or np.abs(lin @ lin.T - np.eye(3)).max() > 1e-5 \
            or np.linalg.det(lin) < 0:
        return False
    return free or bool(np.abs(lin - np.eye(3)).max() <= 1e-5)


def _held(track: tuple, local: np.ndarray, tol: float) -> np.ndarray:
    """Which of rotation, translation, scale a track holds at the rest pose ``local``
    throughout (an editor keys every bone; Blender fills a part the clip does not key
    with the bone's rest)."""
    t, q, p, sc = track
    r_t, r_q, r_s = decompose_matrix(local)
    return np.array([(1 - np.abs(quat_normalize(q) @ r_q)).max() <= 1e-10,
                     np.abs(p - r_t).max() <= tol, np.abs(sc - r_s).max() <= 1e-5])


def _turned(track: tuple, left: np.ndarray, right: np.ndarray, held: np.ndarray,
            rest: np.ndarray) -> tuple:
    """The track's poses ``left @ pose @ right``; the parts it only ``held`` at the rest
    become those of ``rest`` (the reframed rest)."""
    t, q, p, sc = track
    mats = left[None] @ trs_to_matrix(p, quat_normalize(q), sc) @ right[None]
    tv, qv, sv = decompose_matrix(mats)
    r_t, r_q, r_s = decompose_matrix(rest)
    if held[0]:
        qv = np.tile(r_q, (len(t), 1))
    if held[1]:
        tv = np.tile(r_t, (len(t), 1))
    if held[2]:
        sv = np.tile(r_s, (len(t), 1))
    return t, quat_continuous(qv), tv, sv


def reframe(m: ShapeModel, ref: ShapeModel, match: Matching, tol: float,
            strict: bool = True) -> tuple:
    """``m`` seen in the original's node frames: ``(model, why)``.

    An editor may turn a skin joint's frame about its origin (Blender points each
    bone at its children) and make up for it in the bind matrices and keys: each
    matched joint's rest frame is the original's times a rotation ``C``, which is
    undone here in rest transforms, keys, object offsets and vertices.  Other nodes
    must keep their frames (``C`` the identity), and every node its origin.
    Blender 3.4 also reads a skin whose ``skeleton`` is the export's ``z-up``
    wrapper with that axis change applied twice to the skeleton's rest (not to
    its keys, nor to the parts of a pose a clip keys): a joint tree's rest may be
    turned by it as a whole.  ``why`` names the first node or object whose frame
    moved otherwise; with ``strict`` False such a part (or one without a
    counterpart) keeps its frame instead and ``why`` is None."""
    wm, wr = _worlds(m), _worlds(ref)
    turn: dict = {}                             # m node -> C
    extra: dict = {}                            # m root -> the rest's extra turn
    trees: dict = {}
    for i in range(len(m.nodes)):
        root = i
        while m.nodes[root].parent >= 0:
            root = m.nodes[root].parent
        trees.setdefault(root, []).append(i)
    for root, members in trees.items():
        free_root = m.nodes[root].scene_node in m.joints
        best: tuple | None = None
        for e in ([np.eye(4), GLTF_TO_SHAPE] if free_root else [np.eye(4)]):
            got, bad = {}, None
            for i in members:
                j = match.nodes.get(i)
                c = np.linalg.inv(e @ wr[j]) @ wm[i] if j is not None else None
                if c is not None and _rotation_only(c, tol, m.nodes[i].scene_node in m.joints):
                    got[i] = c
                elif bad is None:
                    bad = i
            if best is None or len(got) > len(best[1]):
                best = (e, got, bad)
            if bad is None:
                break
        e, got, bad = best
        if bad is not None and strict:
            j = match.nodes.get(bad)
            return m, f"node {(ref.nodes[j].name if j is not None else m.nodes[bad].name)!r} rest transform"
        extra[root] = e
        for i in members:
            turn[i] = got.get(i, np.eye(4))
    out = copy.copy(m)
    inv = {i: np.linalg.inv(c) for i, c in turn.items()}
    out.nodes = [NodeM(n.name, n.parent,
                       (np.linalg.inv(extra.get(i, np.eye(4))) if n.parent < 0 else turn[n.parent])
                       @ n.local @ inv[i], n.scene_node, n.extras) for i, n in enumerate(m.nodes)]
    out.sequences = []
    for sq in m.sequences:
        keys = {}
        for i, k in sq.node_keys.items():
            held = _held(k, m.nodes[i].local, tol)
            if held.all():
                continue                        # the rest: compared as the rest
            # keys are the pose itself, not read through the rest: no extra turn
            keys[i] = _turned(k, np.eye(4) if m.nodes[i].parent < 0 else turn[m.nodes[i].parent],
                              inv[i], held, out.nodes[i].local)
        out.sequences.append(SequenceM(sq.name, sq.duration, sq.extras, keys, sq.object_keys))
    out.objects = []
    for oi, o in enumerate(m.objects):
        x = turn[o.node] @ o.offset
        j = match.objects.get(oi)
        c = np.linalg.inv(ref.objects[j].offset) @ x if j is not None else None
        if c is None or not _rotation_only(c, tol, o.scene_node in m.joints):
            if strict:
                return m, f"object {(ref.objects[j].name if j is not None else o.name)!r}"
            c = x.copy()                        # its frame's turn goes into the vertices
            c[:3, 3] = 0.0
            if np.linalg.det(c[:3, :3]) <= 0:
                c = np.eye(4)
        lin = c[:3, :3]
        normal_map = np.linalg.inv(lin).T
        out.objects.append(ObjectM(o.name, o.node, x @ np.linalg.inv(c), o.frames @ lin.T,
                                   o.normals @ normal_map.T, o.uvs, o.materials, o.scene_node,
                                   o.extras))
    return out, None


# ---------------------------------------------------------------------------
# the whole model


def compare(m: ShapeModel, ref: ShapeModel) -> Matching:
    """The matching of ``m`` to ``ref`` with ``why`` the first difference (None: the same)."""
    match = match_parts(m, ref)
    if match.why is not None:
        return match
    tol = 1e-5 * shape_extent(ref)
    m, match.why = reframe(m, ref, match, tol)
    if match.why is not None:
        return match
    for i, j in match.nodes.items():
        if not same_transform(m.nodes[i].local, ref.nodes[j].local, tol):
            match.why = f"node {ref.nodes[j].name!r} rest transform"
            return match
    used = {material_key(m, int(x)) for o in m.objects for x in o.materials}
    if used != {material_key(ref, int(x)) for o in ref.objects for x in o.materials}:
        match.why = "materials"
        return match
    for i, j in match.objects.items():
        o, r = m.objects[i], ref.objects[j]
        if not (same_transform(o.offset, r.offset, tol) and same_geometry(o, m, r, ref, tol)):
            match.why = f"object {r.name!r}"
            return match
    for i, j in match.sequences.items():
        why = same_sequence(m.sequences[i], ref.sequences[j], m, ref, match, tol)
        if why is not None:
            match.why = why
            return match
    return match
