"""A neutral scene read back as the parts of a Darkstar shape (import, step 1).

:func:`shape_model` undoes what :mod:`.scene` and :mod:`.skinning` do, for
any glTF-convention scene (potsherd's own exports, Blender's, assimp's):

* the axis change: world matrices are turned from glTF's Y-up, +Z-front into
  the shape's Z-up, +Y-front frame (``(x, y, z) -> (-x, z, y)`` is its own
  inverse); a root that only carries that rotation (the export's ``z-up``)
  disappears;
* nodes keep the hierarchy; nodes holding skinned meshes are not nodes;
* geometry: a mesh on a node, or skinned vertices split by their dominant
  joint (moved into that joint's space by its inverse bind matrix, identity
  when the skin has none, as glTF specifies), belongs
  to that node; a leaf node with geometry and no transform animation is an
  *object* on its parent, at its local offset (the export's object nodes);
  a transform the shape cannot hold (scale in v8, rotation of a v8 object)
  goes into the vertices, and each mirror so baked (negative determinant)
  reverses the triangles' winding, as glTF draws mirrored nodes;
* animations: node TRS keys sampled on the union of their channel times,
  morph weights as mesh frames (a target alone at weight 1 is its frame, no
  weight the mesh, and each blend, such as Blender's LINEAR shape-key tracks,
  a frame of its own, sampled at ``WEIGHT_RATE`` between sparse keys), STEP
  scale-to-zero on an object as its visibility.  Morph targets that nothing
  animates, at non-zero default weights, are baked into the mesh instead.

Everything is compared and encoded from this model, so an unedited shape
gives the same model whichever export form (skinned or not) it went through.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...scene import (Z_UP_Y_FORWARD_TO_GLTF, Scene, decompose_matrix,
                      quat_normalize, quat_slerp, trs_to_matrix)
from ...scene.ops import default_morph_weights, morphed
from ...scene.geometry import first_labels
from ...scene.xform import inverse_affine
from .skinning import world_matrices

#: glTF world -> shape world (the wrap rotation is a half turn: its own inverse)
GLTF_TO_SHAPE = trs_to_matrix(rotation=np.array(Z_UP_Y_FORWARD_TO_GLTF))
EPS = 1e-6


def _inverse(m: np.ndarray) -> np.ndarray:
    """The inverse of a world matrix (or of each of a stack of them), also of one
    a scale of 0 collapses (a part hidden by scaling it away): geometry taken into
    its frame stays flat along the collapsed axes, as glTF draws it
    (``xform.inverse_affine``)."""
    return inverse_affine(m)[0]


def _close_to_identity(m: np.ndarray, tol: float = 1e-6) -> bool:
    return bool(np.abs(m - np.eye(4)).max() <= tol)


@dataclass
class NodeM:
    name: str
    parent: int                      #: model node index, -1 for a root
    local: np.ndarray                #: (4, 4) rest transform in shape space
    scene_node: int
    extras: dict = field(default_factory=dict)


@dataclass
class ObjectM:
    name: str
    node: int                        #: model node it hangs on
    offset: np.ndarray               #: (4, 4)
    frames: np.ndarray               #: (F, C, 3) corner positions per frame, object space
    normals: np.ndarray              #: (C, 3)
    uvs: np.ndarray                  #: (C, 2)
    materials: np.ndarray            #: (T,) scene material index, -1 none
    scene_node: int                  #: the glTF node standing for the object (offset node or its node)
    extras: dict = field(default_factory=dict)
    #: (labels (C,), frames, normals, uvs): corners of one label have the same frames,
    #: normal and uv (a vertex's corners), so an encoder may weld the labels' first
    #: corners only; valid while those very arrays are the object's (see ``labels``)
    _shared: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def triangles(self) -> int:
        return self.frames.shape[1] // 3

    def share_labels(self, labels: np.ndarray | None) -> None:
        """Record corner labels (see ``_shared``) for the current arrays."""
        self._shared = None if labels is None else (labels, self.frames, self.normals, self.uvs)

    @property
    def labels(self) -> np.ndarray | None:
        """The corner labels, or None once any of the arrays was replaced."""
        sh = self._shared
        if sh is None or sh[1] is not self.frames or sh[2] is not self.normals \
                or sh[3] is not self.uvs:
            return None
        return sh[0]


@dataclass
class SequenceM:
    name: str
    duration: float
    extras: dict
    #: model node -> (times (K,), rotation (K, 4) glTF convention, translation (K, 3), scale (K, 3))
    node_keys: dict = field(default_factory=dict)
    #: model object -> (times (K,), frame (K,) or None, visible (K,) bool or None)
    object_keys: dict = field(default_factory=dict)


@dataclass
class ShapeModel:
    nodes: list
    objects: list
    sequences: list
    materials: list                  #: scene materials (the Material dataclasses)
    extras: dict
    warnings: list
    images: list = field(default_factory=list)
    #: scene nodes that are skin joints: an editor may re-orient their frames (Blender
    #: turns each bone toward its children) and make up for it in the bind matrices
    joints: set = field(default_factory=set)


_COPY_SUFFIX = re.compile(r"\.\d+$")


def base_name(name: str) -> str:
    """``name`` without an editor's copy suffix (``.1``, ``.001``)."""
    return _COPY_SUFFIX.sub("", name)


def original_name(item: Any) -> str:
    """The name before export made it unique (kept in ``extras.originalName``)."""
    ex = getattr(item, "extras", None) or {}
    n = ex.get("originalName")
    return n if isinstance(n, str) else (item.name or "")


# ---------------------------------------------------------------------------
# channels


def sample(times: np.ndarray, values: np.ndarray, interpolation: str, at: np.ndarray,
           rotation: bool = False) -> np.ndarray:
    """Channel values at times ``at`` (held before the first and after the last key)."""
    return np.ascontiguousarray(sample_many(times, [values], interpolation, at, rotation)[:, 0])


def sample_many(times: np.ndarray, values: list, interpolation: str, at: np.ndarray,
                rotation: bool = False) -> np.ndarray:
    """:func:`sample` of several channels with the same key times: (len(at), N, d)."""
    times = np.asarray(times, np.float64)
    rows = []
    for v in values:
        v = np.asarray(v, np.float64)
        if interpolation == "CUBICSPLINE":
            v = v.reshape(len(times), 3, -1)[:, 1]
        rows.append(v.reshape(len(times), -1))
    values = np.stack(rows, axis=1)
    if len(times) == 1:
        return np.repeat(values, len(at), axis=0)
    i = np.clip(np.searchsorted(times, at, side="right") - 1, 0, len(times) - 1)
    j = np.minimum(i + 1, len(times) - 1)
    if interpolation == "STEP":
        return values[i]
    span = times[j] - times[i]
    u = np.where(span > 0, (at - times[i]) / np.where(span > 0, span, 1), 0.0)
    u = np.clip(u, 0.0, 1.0)
    exact = np.isclose(at, times[i], rtol=0, atol=1e-9)
    if rotation:
        out = quat_slerp(values[i], values[j], u[:, None])
    else:
        out = values[i] + (values[j] - values[i]) * u[:, None, None]
    out[exact] = values[i][exact]
    return out


#: blended morph weights are baked into mesh frames at this many steps per unit
WEIGHT_STEPS = 255
#: a LINEAR weights track is sampled at this rate between keys further apart than two samples
WEIGHT_RATE = 30.0
#: at most this many samples are added to one weights track (a longer one is sampled sparser)
MAX_WEIGHT_SAMPLES = 4096
#: at most this many blended frames per mesh (more blends are baked at coarser weight steps)
MAX_BLEND_FRAMES = 256


def weight_keys(c: Any) -> tuple[np.ndarray, np.ndarray]:
    """(times, weights (K, targets)) a morph weights channel plays as mesh frames,
    which the engine steps between: its keys, and, where a LINEAR or CUBICSPLINE
    track moves between keys further apart than two ``WEIGHT_RATE`` samples,
    samples at that rate (sparser past ``MAX_WEIGHT_SAMPLES``); weights rounded
    to ``1 / WEIGHT_STEPS``."""
    times = np.asarray(c.times, np.float64)
    w = sample(times, c.values, c.interpolation, times) if len(times) else np.zeros((0, 0))
    if c.interpolation != "STEP" and len(times) > 1:
        step = 1.0 / WEIGHT_RATE
        gaps = [(t0, t1) for t0, t1, a, b in zip(times[:-1], times[1:], w[:-1], w[1:])
                if t1 - t0 > 2 * step and not np.array_equal(a, b)]
        span = sum(t1 - t0 for t0, t1 in gaps)
        if np.isfinite(span) and span > 0:
            step = max(step, span / MAX_WEIGHT_SAMPLES)
            extra = [np.arange(t0 + step, t1 - step / 2, step) for t0, t1 in gaps]
            times = np.unique(np.concatenate([times] + extra))
            w = sample(c.times, c.values, c.interpolation, times)
    return times, np.round(w * WEIGHT_STEPS) / WEIGHT_STEPS


def _one_hot_frame(w: np.ndarray, rest_held: bool = False) -> np.ndarray:
    """Per row of rounded weights: the mesh frame it is (0 for none, k + 1 for
    target k alone at weight 1), or -1 for a blend.  With ``rest_held`` frame 0
    is the shape at the default weights (:func:`_rest_shape`), so no weight at
    all is a blend too."""
    if not w.shape[1]:
        return np.zeros(len(w), np.int64)
    nonzero = (w != 0).sum(axis=1)
    top = np.argmax(w, axis=1)
    return np.where(nonzero == 0, -1 if rest_held else 0,
                    np.where((nonzero == 1) & (w.max(axis=1) == 1), top + 1, -1))


def _rest_shape(scene: Scene, node: int) -> Any:
    """The default morph weights ``node`` shows at rest when any is non-zero (a
    Blender shape key left at 0.5), else None: the shape's first mesh frame,
    drawn when no sequence plays, must be that shape (glTF's rest), not the
    base mesh."""
    if not 0 <= node < len(scene.nodes):
        return None
    nd = scene.nodes[node]
    if nd.mesh is None or not 0 <= nd.mesh < len(scene.meshes):
        return None
    w = default_morph_weights(nd, scene.meshes[nd.mesh])
    if w is None or not np.any(np.asarray(w, np.float64) != 0):
        return None
    return w


def _blends(scene: Scene, warnings: list) -> dict[int, tuple[dict, list]]:
    """Per mesh node, the blended weight rows its animations play: (row bytes ->
    blend number, the weights each blend is baked at).  Each blend becomes a mesh
    frame after the targets' own; past ``MAX_BLEND_FRAMES`` blends, they are
    baked at coarser weight steps, with a warning."""
    rows: dict[int, dict] = {}
    for a in scene.animations:
        for c in a.channels:
            if c.path != "weights" or not 0 <= c.node < len(scene.nodes) or not len(c.times):
                continue
            _, w = weight_keys(c)
            for row in w[_one_hot_frame(w, _rest_shape(scene, c.node) is not None) < 0]:
                rows.setdefault(c.node, {}).setdefault(row.tobytes(), row)
    out: dict[int, tuple[dict, list]] = {}
    for node, seen in rows.items():
        steps, all_rows = WEIGHT_STEPS, np.stack(list(seen.values()))
        coarse, which = np.unique(all_rows, axis=0, return_inverse=True)
        while len(coarse) > MAX_BLEND_FRAMES and steps > 1:
            steps //= 2
            coarse, which = np.unique(np.round(all_rows * steps) / steps, axis=0,
                                      return_inverse=True)
        if steps != WEIGHT_STEPS:
            warnings.append(f"node {original_name(scene.nodes[node])!r}: {len(all_rows)} blended "
                            f"morph weight keys baked into {len(coarse)} mesh frames (weights in "
                            f"steps of 1/{steps})")
        out[node] = (dict(zip(seen, which.reshape(-1).tolist())), list(coarse))
    return out


# ---------------------------------------------------------------------------
# the model


def _geometry_pieces(scene: Scene, worlds: list, warnings: list,
                     blends: dict[int, tuple]) -> dict[int, list]:
    """Scene node -> pieces ``(frames (F, C, 3), normals (C, 3), uvs (C, 2),
    material, holder node, labels (C,))`` in that node's space, one per primitive
    part.  The frames are the mesh, each morph target's shape, then each of
    ``blends`` (:func:`_blends`); corners of one label are alike (a vertex's
    corners, see ``ObjectM.labels``), so the encoder welds one corner per label."""
    pieces: dict[int, list] = {}
    animated = _animated_paths(scene)
    for hi, node in enumerate(scene.nodes):
        if node.mesh is None or not 0 <= node.mesh < len(scene.meshes):
            continue
        mesh = scene.meshes[node.mesh]
        # morph targets that nothing animates, held at non-zero default weights
        # (a Blender shape key left at 0.5): the mesh is the shape a viewer shows.
        # Zero weights keep the targets as mesh frames (the export's own form).
        rest_weights = held = None
        if "weights" not in animated.get(hi, ()):
            rest_weights = _rest_shape(scene, hi)
        else:                      # animated: frame 0 is the rest shape, no weight a blend
            held = _rest_shape(scene, hi)
        skin = scene.skins[node.skin] if node.skin is not None and 0 <= node.skin < len(scene.skins) else None
        for pi, prim in enumerate(mesh.primitives):
            if prim.mode != 4 or prim.positions is None or len(prim.positions) == 0:
                if prim.mode != 4:
                    warnings.append(f"mesh {mesh.name!r} primitive {pi}: mode {prim.mode} is not "
                                    "triangles; skipped")
                continue
            pos = np.asarray(prim.positions, np.float64)
            n = len(pos)
            idx = (np.arange(n) if prim.indices is None else np.asarray(prim.indices, np.int64)).reshape(-1)
            idx = idx[: len(idx) - len(idx) % 3]
            if idx.size and (idx.min() < 0 or idx.max() >= n):
                warnings.append(f"mesh {mesh.name!r} primitive {pi}: indices outside its vertices; skipped")
                continue
            if rest_weights is not None:             # held, unanimated: the one shape
                frames = morphed(prim, rest_weights, pos)[0][None]
            else:                                    # the mesh frames
                rows = blends[hi][1] if hi in blends else []
                frames = np.stack([pos if held is None else morphed(prim, held, pos)[0]]
                                  + [pos + np.asarray(t.positions, np.float64)
                                           for t in prim.targets
                                           if t.positions is not None and len(t.positions) == n]
                                  + [morphed(prim, w, pos)[0] for w in rows])
            nrm = (np.asarray(prim.normals, np.float64) if prim.normals is not None
                   and len(prim.normals) == n else np.zeros((n, 3)))
            uv = (np.asarray(prim.uvs[0], np.float64) if prim.uvs and len(prim.uvs[0]) == n
                  else np.zeros((n, 2)))
            if skin is None or prim.joints is None or prim.weights is None:
                pieces.setdefault(hi, []).append((frames[:, idx], nrm[idx], uv[idx], prim.material, hi,
                                                  idx))
                continue
            joints = np.asarray(prim.joints, np.int64).reshape(n, -1)
            weights = np.asarray(prim.weights, np.float64).reshape(n, -1)
            dominant = joints[np.arange(n), np.argmax(weights, axis=1)]
            # (some vertex with two weights over 0.01, as a count: a row sort is slow;
            # the weights are finite, require_finite saw to that)
            if ((weights > 0.01).sum(axis=1) > 1).any():
                warnings.append(f"mesh {mesh.name!r}: blended skin weights reduced to each vertex's "
                                "strongest joint (shape meshes are rigid on one node)")
            corner_joint = dominant[idx].reshape(-1, 3)
            # (the three columns compared: a reduction along rows of three is slow)
            c0, c1, c2 = corner_joint[:, 0], corner_joint[:, 1], corner_joint[:, 2]
            spanning = int(((c0 != c1) | (c1 != c2)).sum())
            if spanning:
                warnings.append(f"mesh {mesh.name!r}: {spanning} triangles have corners on "
                                "different joints; shape meshes are rigid, so each follows one "
                                "joint and its other corners leave theirs when the joints move "
                                "apart")
            # a triangle belongs to the joint of most of its corners (its first on a tie)
            tri_joint = np.where(corner_joint[:, 1] == corner_joint[:, 2], corner_joint[:, 1],
                                 corner_joint[:, 0])
            # no inverseBindMatrices: identity, as glTF specifies (each vertex is then
            # in its own joint's space), not the joint's rest world inverted
            ibm = skin.inverse_bind_matrices
            binds = (np.asarray(ibm, np.float64).reshape(-1, 4, 4) if ibm is not None
                     else np.tile(np.eye(4), (len(skin.joints), 1, 1)))
            # each joint's skinning matrix at rest: bind space -> world
            posed = {k: worlds[int(skin.joints[k])] @ binds[k]
                     for k in range(min(len(skin.joints), len(binds)))}
            _skinned_pieces(pieces, mesh.name, skin, worlds, binds, posed, idx, tri_joint,
                            dominant, frames, nrm, uv, prim.material, hi, warnings)
    return pieces


def _skinned_pieces(pieces: dict, mesh_name: str, skin: Any, worlds: list, binds: np.ndarray,
                    posed: dict, idx: np.ndarray, tri_joint: np.ndarray, dominant: np.ndarray,
                    frames: np.ndarray, nrm: np.ndarray, uv: np.ndarray, material: Any, hi: int,
                    warnings: list) -> None:
    """The pieces of a skinned primitive, one per joint (in joint order) with
    triangles, added to ``pieces`` under the joint's node: its triangles' corners
    taken into the joint's space.  A corner of another joint is where that joint
    poses it at rest, seen from this joint (the same as this joint's bind matrix
    when the rest pose is the bind pose); this joint's own corners take its bind
    matrix.  All corners are moved in one pass, each by its index into the few
    distinct matrices (inverted once each, not per corner)."""
    by_joint = np.argsort(tri_joint, kind="stable")     # each joint's triangles, in order
    joint_ids, starts = np.unique(tri_joint[by_joint], return_index=True)
    ends = starts[1:].tolist() + [len(by_joint)]
    runs = []                                           # (joint, first, end triangle)
    for j, a, b in zip(joint_ids.tolist(), starts.tolist(), ends):
        if not 0 <= j < len(skin.joints):
            warnings.append(f"mesh {mesh_name!r}: joint {j} outside its skin; triangles skipped")
            continue
        runs.append((j, a, b))
    if not runs:
        return
    tris = np.concatenate([by_joint[a:b] for _, a, b in runs])
    corners = np.take(idx.reshape(-1, 3), tris, axis=0).reshape(-1)
    # each triangle's joint (its corners' joint: compared per triangle, not copied per corner)
    tri_run_joint = np.repeat(np.array([j for j, _, _ in runs], np.int64), [b - a for _, a, b in runs])
    corner_dom = dominant[corners]
    mats = [binds[j] for j, _, _ in runs]               # matrix k: run k's bind
    which = np.repeat(np.arange(len(runs)), [3 * (b - a) for _, a, b in runs])
    other = (corner_dom.reshape(-1, 3) != tri_run_joint[:, None]).reshape(-1)
    if other.any():
        # the distinct (joint, dominant joint) pairs in order, as one integer each
        # (a 1-D unique, several times faster than np.unique(axis=0) on the pairs)
        at_other = np.flatnonzero(other)
        j, d = tri_run_joint[at_other // 3], corner_dom[at_other]
        d_min = int(d.min())
        span = int(d.max()) - d_min + 1
        keys, inv = np.unique(j * span + (d - d_min), return_inverse=True)
        pairs = np.stack([keys // span, keys % span + d_min], 1)
        pair_mat = np.full(len(pairs), -1)
        usable = [(p, int(skin.joints[j]), d) for p, (j, d) in enumerate(pairs.tolist())
                  if d in posed]
        if usable:               # the target joints' world inverses in one batch
            targets = sorted({t for _, t, _ in usable})
            to_target = dict(zip(targets, _inverse(np.stack([worlds[t] for t in targets]))))
            for p, target, d in usable:
                pair_mat[p] = len(mats)
                mats.append(to_target[target] @ posed[d])
        chosen = pair_mat[inv.reshape(-1)]
        sub = which[other]
        which[other] = np.where(chosen >= 0, chosen, sub)
    mats = np.stack(mats)
    # each corner is a (vertex, matrix) pair, and its vertex's corners share a few:
    # the pairs are moved once each, in order of first appearance, then given out
    reps, label = _distinct_pairs(corners, which, other, len(frames[0]))
    corners, which = corners[reps], which[reps]
    # (np.take: several times faster than fancy indexing of rows, the same values;
    # only the top three rows, linear part and translation: a quarter less to copy)
    per = np.take(mats[:, :3], which, axis=0)
    f = np.take(frames, corners, axis=1)
    lin = per[:, :, :3]
    moved = np.empty_like(f)
    moved[0] = np.einsum("cij,cj->ci", lin, f[0]) + per[:, :, 3]
    if len(f) > 1:
        moved[1:] = np.einsum("cij,fcj->fci", lin, f[1:] - f[0][None]) + moved[0][None]
    nm = np.take(nrm, corners, axis=0)
    m_lin = mats[:, :3, :3]
    m_solid = np.abs(np.linalg.det(m_lin)) > 1e-12
    solid = m_solid[which]
    if solid.any():
        m_inv = np.zeros_like(m_lin)
        m_inv[m_solid] = np.linalg.inv(m_lin[m_solid])
        if solid.all():
            nm = np.einsum("cj,cji->ci", nm, np.take(m_inv, which, axis=0))
        else:
            nm[solid] = np.einsum("cj,cji->ci", nm[solid], m_inv[which[solid]])
    uv_c = np.take(uv, corners, axis=0)
    at = 0
    for j, a, b in runs:                # each joint's corners taken from the pairs
        c0, c1 = at, at + 3 * (b - a)
        at = c1
        lab = label[c0:c1]
        piece = (np.take(moved, lab, axis=1), np.take(nm, lab, axis=0), np.take(uv_c, lab, axis=0),
                 material, hi, lab)
        pieces.setdefault(int(skin.joints[j]), []).append(_mirrored(piece, binds[j][:3, :3]))


def _distinct_pairs(corners: np.ndarray, which: np.ndarray, other: np.ndarray,
                    n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(reps, label)``: the first corner of each distinct (vertex, matrix) pair, in
    corner order, and each corner's pair.  A corner on its own joint has that joint's
    matrix, so its vertex alone is its key (a table of ``n``); only the few on
    another joint's triangles need the pair, as one integer each."""
    key = corners.copy()
    if other.any():
        _, inv = np.unique(corners[other] * (int(which.max()) + 1) + which[other],
                           return_inverse=True)
        key[other] = n + inv.reshape(-1)
    return first_labels(key)


def _mirrored(piece: tuple, lin: np.ndarray) -> tuple:
    """``piece`` with each triangle's winding reversed when ``lin``, the linear map
    just baked into its corners, mirrors (negative determinant): glTF draws a
    mirrored node's triangles with the opposite front face, and the shape has no
    mirroring transform to say so, so the corners must (its faces stay front
    facing)."""
    if np.linalg.det(lin) >= 0:
        return piece
    frames, nrm, uv = piece[:3]
    order = np.arange(frames.shape[1]).reshape(-1, 3)[:, [0, 2, 1]].reshape(-1)
    labels = piece[5] if len(piece) > 5 and piece[5] is not None else None
    return (frames[:, order], nrm[order], uv[order], piece[3], piece[4],
            None if labels is None else labels[order])


def _animated_paths(scene: Scene) -> dict[int, set]:
    out: dict[int, set] = {}
    for a in scene.animations:
        for ch in a.channels:
            out.setdefault(ch.node, set()).add(ch.path)
    return out


def _holds_rest(scene: Scene, ch: Any) -> bool:
    """Whether a rotation/translation channel only holds its node's rest value (within
    float32 noise): Blender writes such a channel for every bone of every action,
    and it moves nothing."""
    n = scene.nodes[ch.node]
    v = np.asarray(ch.values, np.float64)
    if not v.size:
        return True
    if ch.path == "rotation":
        rest = np.asarray(n.rotation if n.rotation is not None else (0, 0, 0, 1), np.float64)
        v = v.reshape(-1, 4)
        dot = np.abs(v @ rest) / np.maximum(np.linalg.norm(v, axis=1) * np.linalg.norm(rest), EPS)
        return bool((1 - dot).max() <= 1e-10)          # within ~3e-5 rad
    rest = np.asarray(n.translation if n.translation is not None else (0, 0, 0), np.float64)
    v = v.reshape(-1, 3)
    size = max(1.0, float(np.abs(v).max()), float(np.abs(rest).max()))
    return bool(np.abs(v - rest).max() <= 1e-5 * size)


def _moving_paths(scene: Scene) -> dict[int, set]:
    """Per node, the rotation/translation channels that move it (see :func:`_holds_rest`)."""
    out: dict[int, set] = {}
    for a in scene.animations:
        for ch in a.channels:
            if ch.path in ("rotation", "translation") and 0 <= ch.node < len(scene.nodes) \
                    and not _holds_rest(scene, ch):
                out.setdefault(ch.node, set()).add(ch.path)
    return out


def _is_wrapper(scene: Scene, i: int, parents: list, anim: dict) -> bool:
    n = scene.nodes[i]
    if parents[i] is not None or n.mesh is not None or not n.children or anim.get(i):
        return False
    local = (np.asarray(n.matrix, np.float64) if n.matrix is not None
             else trs_to_matrix(n.translation, n.rotation, n.scale))
    return _close_to_identity(GLTF_TO_SHAPE @ local)


def shape_model(scene: Scene, *, version: int = 8) -> ShapeModel:
    """The shape parts of ``scene`` (see the module docstring)."""
    warnings: list = []
    parents = scene.parents()
    worlds = world_matrices(scene)
    anim = _animated_paths(scene)
    moving = _moving_paths(scene)
    skinned_holders = {i for i, n in enumerate(scene.nodes) if n.mesh is not None and n.skin is not None}
    wrappers = {i for i in range(len(scene.nodes)) if _is_wrapper(scene, i, parents, anim)}
    blends = _blends(scene, warnings)
    pieces = _geometry_pieces(scene, worlds, warnings, blends)
    shape_world = [GLTF_TO_SHAPE @ w for w in worlds]

    # beside the axis wrapper, a top-level node holding nothing (no mesh, children or
    # keys) named as a copy of another node is no part of the shape: Blender leaves
    # such an empty per skinned mesh ("dish.2" beside the mesh "dish")
    names = {n.name for n in scene.nodes}
    stray = {i for i, n in enumerate(scene.nodes) if wrappers and parents[i] is None
             and i not in wrappers and n.mesh is None and not n.children and not anim.get(i)
             and base_name(n.name or "") != (n.name or "") and base_name(n.name or "") in names}
    if stray:
        warnings.append(f"{len(stray)} empty top-level node(s) beside the z-up root left out")
    candidates = [i for i in _preorder(scene)
                  if i not in skinned_holders and i not in wrappers and i not in stray]
    cand_set = set(candidates)

    def dts_parent(i: int) -> int | None:
        p = parents[i]
        while p is not None and p not in cand_set:
            p = parents[p]
        return p

    kids: dict[int | None, int] = {}
    for i in candidates:
        kids[dts_parent(i)] = kids.get(dts_parent(i), 0) + 1

    rigid = version >= 8         # v8 transforms have no scale: nodes keep T and R only

    if rigid and candidates:     # all at once: the same values as one by one
        t, r, _s = decompose_matrix(np.stack([shape_world[i] for i in candidates]))
        frames_w = dict(zip(candidates, trs_to_matrix(t, r)))
    else:
        frames_w = {i: shape_world[i] for i in candidates}
    # the frames children and geometry are taken into, inverted in one batch (the
    # same bits as one by one) rather than a call per node
    framed = sorted({p for p in map(dts_parent, candidates) if p is not None}
                    | {i for i in candidates if i in pieces})
    inverses = dict(zip(framed, _inverse(np.stack([frames_w[i] for i in framed])))) if framed else {}

    def local_of(i: int) -> np.ndarray:
        p = dts_parent(i)
        return frames_w[i] if p is None else inverses[p] @ frames_w[i]

    def key_fix(i: int) -> np.ndarray:
        """Scene-local keys of node ``i`` -> its shape-local transform."""
        p, sp = dts_parent(i), parents[i]
        above = GLTF_TO_SHAPE if sp is None else shape_world[sp]
        return above if p is None else inverses[p] @ above

    object_leaf = set()
    for i in candidates:
        if i not in pieces or kids.get(i) or dts_parent(i) is None:
            continue
        if moving.get(i):               # a leaf that moves is a node (its geometry an object on it)
            continue
        object_leaf.add(i)

    node_index: dict[int, int] = {}
    nodes: list[NodeM] = []
    for i in candidates:
        if i in object_leaf:
            continue
        p = dts_parent(i)
        while p is not None and p in object_leaf:
            p = dts_parent(p)
        node_index[i] = len(nodes)
        n = scene.nodes[i]
        nodes.append(NodeM(original_name(n) or f"node {i}", node_index.get(p, -1) if p is not None else -1,
                           local_of(i), i, dict(n.extras)))

    objects: list[ObjectM] = []
    object_of_scene_node: dict[int, int] = {}
    object_of_holder: dict[int, int] = {}
    for i in candidates:
        if i not in pieces:
            continue
        ps = pieces[i]
        if i in object_leaf:
            host = node_index[dts_parent(i)]
            offset = inverses[dts_parent(i)] @ shape_world[i]
        else:
            host = node_index[i]
            offset = inverses[i] @ shape_world[i]     # scale a v8 node cannot hold
        lin = offset[:3, :3]
        if (version >= 8 or i not in object_leaf) and np.abs(lin - np.eye(3)).max() > 1e-9:
            # v8 objects are offset by a translation only: the rest goes into the vertices
            inv_t = np.linalg.inv(lin).T if abs(np.linalg.det(lin)) > 1e-12 else lin
            # (no labels: a matrix product need not give equal rows equal bits)
            ps = [_mirrored((p[0] @ lin.T, p[1] @ inv_t.T, p[2], p[3], p[4], None), lin) for p in ps]
        if version >= 8 or i not in object_leaf:
            t_only = np.eye(4)
            t_only[:3, 3] = offset[:3, 3] if i in object_leaf else 0.0
            if i not in object_leaf and np.abs(offset[:3, 3]).max() > 1e-9:
                ps = [(p[0] + offset[:3, 3], *p[1:]) for p in ps]
            offset = t_only
        nf = max(p[0].shape[0] for p in ps)
        mats = np.concatenate([np.full(p[0].shape[1] // 3, -1 if p[3] is None else int(p[3])) for p in ps])
        node = scene.nodes[i]
        if len(ps) == 1:              # one piece (a joint's triangles): its arrays as they are
            frames, normals, uvs = ps[0][:3]
        else:
            frames = np.concatenate([np.concatenate([p[0], np.repeat(p[0][:1], nf - p[0].shape[0], 0)])
                                     for p in ps], axis=1)
            normals, uvs = np.concatenate([p[1] for p in ps]), np.concatenate([p[2] for p in ps])
        obj = ObjectM(original_name(node) or f"object {i}", host, offset, frames, normals, uvs,
                      mats, i, dict(node.extras))
        obj.share_labels(_object_labels(ps))
        objects.append(obj)
        object_of_scene_node[i] = len(objects) - 1
        for p in ps:
            object_of_holder.setdefault(p[4], len(objects) - 1)

    fixes = {i: key_fix(i) for i in node_index}
    sequences = [_sequence(scene, a, node_index, object_of_scene_node, object_of_holder, object_leaf,
                           fixes, rigid, warnings, blends) for a in scene.animations]
    warnings = list(dict.fromkeys(warnings))          # one line per kind of loss and mesh
    joints = {int(j) for sk in scene.skins for j in sk.joints}
    return ShapeModel(nodes, objects, sequences, list(scene.materials), dict(scene.extras), warnings,
                      list(scene.images), joints)


def _object_labels(ps: list) -> np.ndarray | None:
    """The pieces' corner labels made one object's (each piece's shifted past the
    ones before), or None when a piece has none."""
    if any(p[5] is None for p in ps):
        return None
    if len(ps) == 1:
        return ps[0][5]
    out, at = [], 0
    for p in ps:
        lab = np.asarray(p[5], np.int64)
        out.append(lab + at)
        at += int(lab.max()) + 1 if len(lab) else 0
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def _preorder(scene: Scene) -> list[int]:
    out: list[int] = []
    stack = list(reversed(scene.roots))
    seen = set()
    while stack:
        i = stack.pop()
        if i in seen or not 0 <= i < len(scene.nodes):
            continue
        seen.add(i)
        out.append(i)
        stack.extend(reversed(scene.nodes[i].children))
    return out


def _node_keys(scene: Scene, members: list, by_node: dict, duration: float, fixes: dict,
               rigid: bool) -> dict:
    """Scene node -> (times, rotation, translation, scale, scale keys dropped) of the
    nodes ``members``, whose channels have the same key times: sampled on the union
    of their channels' times, turned into shape-local keys, all in one pass."""
    chans0 = by_node[members[0]]
    parts = [np.asarray(c.times, np.float64) for p, c in chans0.items() if p != "weights"]
    for p, c in chans0.items():
        if p != "weights" and c.interpolation == "STEP" and len(c.times) > 1:
            # shape keys interpolate: hold the old value until just before each step
            ct = np.asarray(c.times, np.float64)
            parts.append(np.maximum(ct[1:] - 1e-4 * max(duration, 1e-3), ct[:-1]))
    times = np.unique(np.concatenate(parts))
    rests = []
    for sn in members:
        n = scene.nodes[sn]
        rests.append({"rotation": n.rotation if n.rotation is not None else (0, 0, 0, 1),
                      "translation": n.translation if n.translation is not None else (0, 0, 0),
                      "scale": n.scale if n.scale is not None else (1, 1, 1)})
    vals = {}
    for path in ("rotation", "translation", "scale"):
        c = chans0.get(path)
        if c is None:
            # every member's rest value at every time (one broadcast, not a tile each)
            rest = np.array([np.asarray(r[path], np.float64) for r in rests], np.float64)
            vals[path] = np.ascontiguousarray(np.broadcast_to(rest[None], (len(times),) + rest.shape))
        else:
            vals[path] = sample_many(c.times, [by_node[sn][path].values for sn in members],
                                     c.interpolation, times, path == "rotation")
    rot = quat_normalize(vals["rotation"])                # (K, N, 4)
    tr, sc = vals["translation"], vals["scale"]
    fix = np.stack([fixes[sn] for sn in members])
    if not _close_to_identity(fix[0], 1e-12):
        with np.errstate(all="ignore"):      # non-finite keys are refused after this
            m = fix[None] @ trs_to_matrix(tr, rot, sc)
            tr, rot, sc = decompose_matrix(m)
    dropped = np.zeros(len(members), bool)
    if rigid:
        rest_m = fix @ trs_to_matrix(np.array([r["translation"] for r in rests], np.float64),
                                     np.array([r["rotation"] for r in rests], np.float64),
                                     np.array([r["scale"] for r in rests], np.float64))
        rest_scale = decompose_matrix(rest_m)[2]
        dropped = np.abs(sc - rest_scale[None]).max(axis=(0, 2)) > 1e-4
        sc = np.ones_like(sc)
    return {sn: (times.copy(), np.ascontiguousarray(rot[:, k]), np.ascontiguousarray(tr[:, k]),
                 np.ascontiguousarray(sc[:, k]), bool(dropped[k])) for k, sn in enumerate(members)}


def _sequence(scene: Scene, a: Any, node_index: dict, object_of_scene_node: dict,
              object_of_holder: dict, object_leaf: set, fixes: dict, rigid: bool,
              warnings: list, blends: dict[int, tuple]) -> SequenceM:
    ends = [float(np.max(c.times)) for c in a.channels if len(c.times)]
    duration = float(a.extras.get("duration", max(ends, default=0.0)))
    if not np.isfinite(duration) or duration < max(ends, default=0.0) - 1e-6:
        duration = max(ends, default=0.0)
    seq = SequenceM(original_name(a), duration, dict(a.extras))
    by_node: dict[int, dict] = {}
    for ch in a.channels:
        by_node.setdefault(ch.node, {})[ch.path] = ch
    empty = bool(a.extras.get("empty"))
    # nodes whose channels have the same key times are sampled and reframed together
    groups: dict = {}
    for sn, chans in by_node.items():
        if sn in node_index and not empty and chans.keys() & {"rotation", "translation", "scale"}:
            sig = (tuple((p, np.asarray(c.times, np.float64).tobytes(), c.interpolation,
                          np.shape(c.values)) for p, c in sorted(chans.items()) if p != "weights"),
                   _close_to_identity(fixes[sn], 1e-12))
            groups.setdefault(sig, []).append(sn)
    keyed: dict = {}
    for members in groups.values():
        keyed.update(_node_keys(scene, members, by_node, duration, fixes, rigid))
    for sn, chans in by_node.items():
        if sn in keyed:
            times, rot, tr, sc, dropped = keyed[sn]
            if dropped:                                 # the rest scale is in the vertices
                warnings.append(f"sequence {seq.name!r}: scale keys of node "
                                f"{original_name(scene.nodes[sn])!r} dropped (v8 has no scale; "
                                "--option version=7 keeps them, and the engine reads v7)")
            seq.node_keys[node_index[sn]] = (times, rot, tr, sc)
        obj = object_of_scene_node.get(sn)
        c = chans.get("scale")
        visible = (np.abs(np.asarray(c.values, np.float64).reshape(len(c.times), -1)).max(axis=1) > EPS
                   if c is not None else None)
        # a scale track is visibility when it is STEP (the export's form) or hides the object
        # somewhere; a resampled scale that never reaches zero (Blender's) hides nothing
        if obj is not None and sn in object_leaf and c is not None and (
                c.interpolation == "STEP" or not visible.all()):
            seq.object_keys.setdefault(obj, [None, None, None])
            seq.object_keys[obj][0] = np.asarray(c.times, np.float64)
            seq.object_keys[obj][2] = visible
        if "weights" in chans:
            obj = object_of_holder.get(sn, object_of_scene_node.get(sn))
            if obj is None:
                continue
            c = chans["weights"]
            times, w = weight_keys(c)
            frame = _one_hot_frame(w, _rest_shape(scene, sn) is not None)   # a blend: after the targets'
            blend_of = blends[sn][0] if sn in blends else {}
            frame[frame < 0] = [w.shape[1] + 1 + blend_of[r.tobytes()] for r in w[frame < 0]]
            keys = seq.object_keys.setdefault(obj, [None, None, None])
            if keys[0] is not None and (len(keys[0]) != len(times) or np.abs(keys[0] - times).max() > 1e-6):
                # visibility and frames on different times: merge onto the union
                union = np.unique(np.concatenate([keys[0], times]))
                keys[2] = sample(keys[0], keys[2].astype(float)[:, None], "STEP", union)[:, 0] > 0.5
                frame = sample(times, frame.astype(float)[:, None], "STEP", union)[:, 0].astype(np.int64)
                times = union
            keys[0], keys[1] = times, frame
    for obj, keys in list(seq.object_keys.items()):
        seq.object_keys[obj] = tuple(keys)
    return seq
