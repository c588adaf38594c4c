"""Scene operations every importer needs (glTF scene -> a game format).

Game formats store what glTF leaves implicit: world-space or bind-pose
vertices, animation keys at a fixed rate, one bone per rigid part, and
vertex buffers without duplicates.  These helpers compute that once, with
numpy, in glTF conventions (column vectors, ``world = parent · local``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .geometry import weld
from .model import Channel, Node, Primitive, Scene
from .xform import decompose_matrix, quat_normalize, quat_slerp, trs_to_matrix

__all__ = ["local_matrix", "parents_first", "world_matrices", "frame_times", "sample_channel",
           "sample_channels", "rest_trs", "sample_node_trs", "sample_nodes_trs", "from_time_zero",
           "skin_matrices", "normal_matrices",
           "skin_blend", "TriangleSet", "triangle_sets",
           "base_color_picture", "default_morph_weights", "morphed",
           "split_by_dominant_joint", "weld_primitive"]


# ---- transforms ------------------------------------------------------------------

def local_matrix(node: Node) -> np.ndarray:
    """The node's local (4, 4) matrix: ``matrix`` if set, else ``T · R · S``."""
    if node.matrix is not None:
        return np.asarray(node.matrix, dtype=np.float64).reshape(4, 4)
    return trs_to_matrix(node.translation, node.rotation, node.scale)


def parents_first(scene: Scene) -> list[int]:
    """Every node, parents first: the roots' trees, then those of nodes no root
    reaches (another glTF scene's, which a skin's joints may still be)."""
    out = []
    shown = set(scene.roots)
    roots = list(scene.roots) + [i for i, p in enumerate(scene.parents())
                                 if p is None and i not in shown]
    stack = list(reversed(roots))
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(reversed(scene.nodes[i].children))
    return out


def world_matrices(scene: Scene, locals_: Optional[np.ndarray] = None) -> np.ndarray:
    """(N, 4, 4) world matrix of every node (parents first, iteratively, so deep
    trees do not recurse).  ``locals_`` overrides the local matrices (posed)."""
    n = len(scene.nodes)
    if locals_ is not None:
        local = np.asarray(locals_, dtype=np.float64)
    else:  # a glTF may hold no node at all
        local = np.array([local_matrix(nd) for nd in scene.nodes], np.float64).reshape(n, 4, 4)
    world = np.empty((n, 4, 4))
    done = np.zeros(n, bool)
    parents = scene.parents()
    for start in range(n):
        chain = []
        j: Optional[int] = start
        while j is not None and not done[j]:
            chain.append(j)
            if len(chain) > n:
                raise ValueError("node hierarchy has a cycle")
            j = parents[j]
        for k in reversed(chain):
            p = parents[k]
            world[k] = local[k] if p is None else world[p] @ local[k]
            done[k] = True
    return world


def skin_matrices(scene: Scene, skin_index: int, world: Optional[np.ndarray] = None
                  ) -> np.ndarray:
    """(J, 4, 4) joint matrices ``world(joint) · inverseBind`` of one skin (the
    matrices linear blend skinning applies to bind-space vertices)."""
    sk = scene.skins[skin_index]
    world = world_matrices(scene) if world is None else world
    jw = world[np.asarray(sk.joints, dtype=np.int64)]
    if sk.inverse_bind_matrices is None:
        return jw
    return jw @ np.asarray(sk.inverse_bind_matrices, dtype=np.float64).reshape(-1, 4, 4)


def normal_matrices(m: np.ndarray) -> np.ndarray:
    """(..., 3, 3) matrices taking normals through the linear parts ``m``: the
    cofactor matrix (``det(m) · inverse(m)ᵀ``) with the determinant's sign, so
    the directions are those of the inverse transpose, yet a singular ``m``
    (a part hidden by scale 0, a common show/hide trick) gives zero normals
    instead of a failed inversion.  Normalise the results."""
    m = np.asarray(m, dtype=np.float64)
    c0, c1, c2 = m[..., :, 0], m[..., :, 1], m[..., :, 2]
    cof = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], axis=-1)
    det = np.einsum("...i,...i->...", c0, cof[..., :, 0])
    return cof * np.where(det < 0, -1.0, 1.0)[..., None, None]


def det3(m: np.ndarray) -> np.ndarray:
    """(...,) determinants of (..., 3, 3) matrices, as the triple product of
    their columns: a skinned mesh asks it of one matrix per vertex, where
    ``np.linalg.det``'s LU factorisation per matrix is several times slower."""
    m = np.asarray(m, dtype=np.float64)
    return np.einsum("...i,...i->...", m[..., :, 0], np.cross(m[..., :, 1], m[..., :, 2]))


def skin_blend(joints: Any, weights: Any, joint_matrices: np.ndarray,
               rigid: np.ndarray) -> tuple:
    """(blend (V, 4, 4), unweighted (V,) bool): each vertex's linear blend
    skinning matrix, weights renormalised to sum 1.

    A vertex whose weights are all zero (or negative, or not finite) has no
    skinning matrix in glTF's formula (it would be the zero matrix and
    collapse the vertex onto the origin); viewers leave such a vertex where
    the mesh has it, so it gets ``rigid`` (the mesh node's world matrix): it
    stays at its bind position, as if rigidly bound to the mesh node.
    ``unweighted`` marks those vertices."""
    j = np.asarray(joints, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    total = w.sum(axis=1, keepdims=True)
    unweighted = total[:, 0] <= 0
    w = w / np.where(unweighted[:, None], 1.0, total)
    jm = np.asarray(joint_matrices, dtype=np.float64)
    j = np.clip(j, 0, len(jm) - 1)
    blend = np.einsum("vk,vkij->vij", w, jm[j])
    blend[unweighted] = np.asarray(rigid, dtype=np.float64)
    return blend, unweighted


# ---- animation sampling --------------------------------------------------------------

def frame_times(duration: float, fps: float) -> np.ndarray:
    """Frame times ``0, 1/fps, ...`` up to the first frame at or after ``duration``."""
    if fps <= 0 or not math.isfinite(fps):
        raise ValueError(f"frame rate must be positive, found {fps}")
    frames = int(math.ceil(max(duration, 0.0) * fps - 1e-6)) + 1
    return np.arange(frames, dtype=np.float64) / fps


def sample_channel(channel: Channel, times: Any) -> np.ndarray:
    """Values of ``channel`` at ``times`` (clamped to its first/last key), as glTF
    viewers evaluate them: STEP holds, LINEAR lerps (slerps rotations), CUBICSPLINE
    is the Hermite spline with the stored tangents (rotations renormalised)."""
    return sample_channels([channel], times)[0]


def sample_channels(channels: list, times: Any) -> list:
    """:func:`sample_channel` of each of ``channels`` at the same ``times``.
    Channels with the same keys, path, interpolation and value width (a clip's
    bones, sampled on one timeline) are evaluated together, one array operation
    for all of them instead of a few dozen small ones each."""
    t = np.asarray(times, dtype=np.float64).reshape(-1)
    out: list = [None] * len(channels)
    groups: dict = {}
    for i, ch in enumerate(channels):
        keys = np.asarray(ch.times, dtype=np.float64).reshape(-1)
        if len(keys) == 0:
            raise ValueError("channel without keys")
        cubic = ch.interpolation == "CUBICSPLINE"
        vals = np.asarray(ch.values, dtype=np.float64).reshape(len(keys) * (3 if cubic else 1), -1)
        key = (ch.path == "rotation", ch.interpolation, vals.shape[1], keys.tobytes())
        g = groups.get(key)
        if g is None:
            groups[key] = g = (keys, [], [])
        g[1].append(i)
        g[2].append(vals)
    for (rotation, interpolation, _, _), (keys, members, vals) in groups.items():
        got = _evaluate(keys, np.stack(vals), interpolation, rotation, t)
        for i, v in zip(members, got):
            out[i] = v
    return out


def _evaluate(keys: np.ndarray, vals: np.ndarray, interpolation: str, rotation: bool,
              t: np.ndarray) -> np.ndarray:
    """(G, F, C) values at ``t`` of G channels sharing ``keys``: ``vals`` (G, K, C),
    or (G, 3K, C) in-tangent, value, out-tangent triples for CUBICSPLINE."""
    cubic = interpolation == "CUBICSPLINE"
    if cubic:
        a_tan, v, b_tan = vals[:, 0::3], vals[:, 1::3], vals[:, 2::3]
    else:
        v = vals
    if len(keys) == 1:
        out = np.repeat(v[:, :1], len(t), axis=1)
        return quat_normalize(out) if rotation else out
    tc = np.clip(t, keys[0], keys[-1])
    k = np.clip(np.searchsorted(keys, tc, side="right") - 1, 0, len(keys) - 2)
    span = keys[k + 1] - keys[k]
    s = (tc - keys[k]) / span
    if interpolation == "STEP":
        idx = np.where(tc >= keys[-1], len(keys) - 1, k)
        return v[:, idx].copy()
    if cubic:
        s2, s3 = s * s, s * s * s
        h00 = 2 * s3 - 3 * s2 + 1
        h10 = s3 - 2 * s2 + s
        h01 = -2 * s3 + 3 * s2
        h11 = s3 - s2
        out = (h00[:, None] * v[:, k] + (span * h10)[:, None] * b_tan[:, k]
               + h01[:, None] * v[:, k + 1] + (span * h11)[:, None] * a_tan[:, k + 1])
        return quat_normalize(out) if rotation else out
    if rotation:
        return quat_slerp(v[:, k], v[:, k + 1], s)
    return v[:, k] + s[:, None] * (v[:, k + 1] - v[:, k])


def from_time_zero(scene: Scene) -> Scene:
    """``scene`` with keys at negative times folded into a key at 0 s.

    A glTF clip starts at 0: a viewer shows, from 0 on, the value the keys
    give there and never plays the keys before it (the glTF validator calls
    them errors; potsherd's writer refuses them; a Python scene or another
    tool's file can hold them).  Each such channel keeps its keys after 0 and
    gets one at 0 with the value (and, for CUBICSPLINE, the slope) it has
    there, so it plays exactly as before from 0 on.  Returns a shallow copy
    sharing everything but the animations (``warnings`` too), or ``scene``
    itself when no key is before 0."""
    import dataclasses
    folded, animations = 0, []
    for a in scene.animations:
        channels = []
        for c in a.channels:
            times = np.asarray(c.times, dtype=np.float64).reshape(-1)
            early = len(times) and times[0] < 0
            channels.append(_folded_at_zero(c, times) if early else c)
            folded += bool(early)
        animations.append(dataclasses.replace(a, channels=channels))
    if not folded:
        return scene
    _warn_once(scene, f"{folded} animation channel(s) have keys before 0 s; folded into a "
                      "key at 0 (a glTF clip starts at 0, as viewers play it)")
    return dataclasses.replace(scene, animations=animations)


def _folded_at_zero(c: Channel, times: np.ndarray) -> Channel:
    cubic = c.interpolation == "CUBICSPLINE"
    vals = np.asarray(c.values, dtype=np.float64).reshape(len(times) * (3 if cubic else 1), -1)
    after = times > 0
    k = int(np.flatnonzero(~after)[-1])           # the last key at or before 0
    if not cubic:
        at0 = vals[k:k + 1] if times[k] == 0 or k == len(times) - 1 else \
            sample_channel(Channel(c.node, c.path, times, vals, c.interpolation), [0.0])
        new = np.concatenate([at0, vals[after]])
    elif times[k] == 0 or k == len(times) - 1:
        at0 = vals[3 * k:3 * k + 3].copy()
        if times[k] != 0:                          # held after the last key: flat
            at0[0] = at0[2] = 0.0
        new = np.concatenate([at0, vals.reshape(len(times), 3, -1)[after].reshape(-1, vals.shape[1])])
    else:                                          # the Hermite segment across 0, split there
        h = times[k + 1] - times[k]
        s = -times[k] / h
        v0, b0 = vals[3 * k + 1], vals[3 * k + 2] * h
        v1, a1 = vals[3 * k + 4], vals[3 * k + 3] * h
        value = ((2 * s**3 - 3 * s**2 + 1) * v0 + (s**3 - 2 * s**2 + s) * b0
                 + (-2 * s**3 + 3 * s**2) * v1 + (s**3 - s**2) * a1)
        slope = ((6 * s**2 - 6 * s) * v0 + (3 * s**2 - 4 * s + 1) * b0
                 + (-6 * s**2 + 6 * s) * v1 + (3 * s**2 - 2 * s) * a1) / h
        new = np.concatenate([np.stack([slope, value, slope]),
                              vals.reshape(len(times), 3, -1)[after].reshape(-1, vals.shape[1])])
    return Channel(c.node, c.path, np.concatenate([[0.0], times[after]]), new, c.interpolation)


def sample_rotation_per_component(channel: Channel, times: Any) -> np.ndarray:
    """A LINEAR rotation channel at ``times`` as Blender plays it: the keys made
    hemisphere-continuous, interpolated per component and renormalised (glTF
    slerps; the two part at large steps, and an importer comparing a Blender
    re-save with its original accepts either)."""
    from .xform import quat_continuous
    t = np.asarray(times, dtype=np.float64).reshape(-1)
    kt = np.asarray(channel.times, np.float64)
    v = quat_continuous(np.asarray(channel.values, np.float64).reshape(len(kt), 4))
    return quat_normalize(np.stack([np.interp(t, kt, v[:, k]) for k in range(4)], axis=1))


def node_rotation_per_component(animation: Any, node: int, times: Any) -> Optional[np.ndarray]:
    """``node``'s LINEAR rotation track in ``animation`` played per component
    (:func:`sample_rotation_per_component`), or None when it has none."""
    for ch in animation.channels:
        if ch.node == node and ch.path == "rotation" and ch.interpolation == "LINEAR" \
                and len(ch.times) > 1:
            return sample_rotation_per_component(ch, times)
    return None


def rest_trs(node: Node) -> tuple:
    """(T (3,), R (4,) xyzw unit, S (3,)) of a node at rest (its matrix decomposed)."""
    if node.matrix is not None:
        return decompose_matrix(np.asarray(node.matrix, dtype=np.float64))
    return (np.zeros(3) if node.translation is None else np.asarray(node.translation, np.float64),
            np.array([0.0, 0, 0, 1]) if node.rotation is None else quat_normalize(node.rotation),
            np.ones(3) if node.scale is None else np.asarray(node.scale, np.float64))


def sample_node_trs(scene: Scene, animation: Any, node: int, times: Any) -> tuple:
    """(T (F, 3), R (F, 4) xyzw, S (F, 3)) of ``node`` at ``times``: animated
    paths sampled, the others held at the node's rest transform."""
    return sample_nodes_trs(scene, animation, [node], times)[node]


_TRS = ("translation", "rotation", "scale")


def sample_nodes_trs(scene: Scene, animation: Any, nodes: Any, times: Any) -> dict:
    """{node: :func:`sample_node_trs`} for each of ``nodes``, their channels
    sampled together (:func:`sample_channels`); a node's last channel of a path
    is the one that counts."""
    t = np.asarray(times, dtype=np.float64).reshape(-1)
    want = set(nodes)
    last: dict = {}
    for ch in animation.channels:
        if ch.node in want and ch.path in _TRS and len(ch.times):
            last[(ch.node, ch.path)] = ch
    sampled = dict(zip(last, sample_channels(list(last.values()), t)))
    out = {}
    for node in nodes:
        if all((node, p) in sampled for p in _TRS):
            out[node] = tuple(sampled[(node, p)] for p in _TRS)
            continue
        rest = rest_trs(scene.nodes[node])
        out[node] = tuple(sampled[(node, p)] if (node, p) in sampled else np.tile(r, (len(t), 1))
                          for p, r in zip(_TRS, rest))
    return out


# ---- geometry ----------------------------------------------------------------------------

@dataclass
class TriangleSet:
    """One primitive as flat triangles in world space (bind pose for skinned ones)."""

    node: int
    mesh: int
    primitive: int
    positions: np.ndarray               #: (V, 3) float64, world space
    indices: np.ndarray                 #: (3T,) int64, counter-clockwise
    normals: Optional[np.ndarray] = None
    uvs: list = field(default_factory=list)
    colors: Optional[np.ndarray] = None
    joints: Optional[np.ndarray] = None
    weights: Optional[np.ndarray] = None
    material: Optional[int] = None
    skin: Optional[int] = None

    @property
    def triangle_count(self) -> int:
        return len(self.indices) // 3

    def transform(self, m: np.ndarray) -> None:
        """Apply the (4, 4) ``m`` in place: positions, normals (renormalised),
        and, when ``m`` mirrors (negative determinant), the winding reversed so
        the triangles keep facing the same way."""
        m = np.asarray(m, dtype=np.float64)
        self.positions = self.positions @ m[:3, :3].T + m[:3, 3]
        if self.normals is not None:
            n = self.normals @ normal_matrices(m[:3, :3]).T
            length = np.linalg.norm(n, axis=1, keepdims=True)
            self.normals = n / np.where(length > 0, length, 1.0)
        if np.linalg.det(m[:3, :3]) < 0:
            self.indices = self.indices.reshape(-1, 3)[:, ::-1].reshape(-1).copy()


def triangle_sets(scene: Scene, *, world: Optional[np.ndarray] = None) -> list:
    """Every drawn triangle primitive with its node's world transform applied.

    Morph targets are applied with their default weights (the node's, else the
    mesh's) before skinning, as a viewer shows the rest shape: a Blender shape
    key left at 0.5 is exported as weight 0.5, and a format without morphs must
    keep the shape the modder saw.  Skinned primitives are posed by linear
    blend skinning with the scene's current (rest) node transforms; their
    node's own transform is ignored, as glTF specifies; a skinned vertex whose
    weights are all zero is the exception: it stays rigid on its mesh node
    (``skin_blend``), with a note in ``scene.warnings``.  A mirroring transform
    (negative determinant) reverses the winding so faces stay front-facing.
    Point and line primitives are skipped with a note in ``scene.warnings``.
    """
    world = world_matrices(scene) if world is None else world
    out = []
    skipped = unweighted_total = 0
    for ni, nd in enumerate(scene.nodes):
        if nd.mesh is None:
            continue
        mesh = scene.meshes[nd.mesh]
        default = default_morph_weights(nd, mesh)
        for pi, p in enumerate(mesh.primitives):
            if p.mode != 4:
                skipped += 1
                continue
            pos = np.asarray(p.positions, dtype=np.float64)
            idx = np.arange(len(pos), dtype=np.int64) if p.indices is None else \
                np.asarray(p.indices, dtype=np.int64).reshape(-1)
            idx = idx[:len(idx) - len(idx) % 3]
            nrm = None if p.normals is None else np.asarray(p.normals, dtype=np.float64)
            pos, nrm = morphed(p, default, pos, nrm)
            skinned = nd.skin is not None and p.joints is not None and p.weights is not None
            if skinned:
                blend, unweighted = skin_blend(p.joints, p.weights,
                                               skin_matrices(scene, nd.skin, world), world[ni])
                unweighted_total += int(unweighted.sum())
            else:
                blend = world[ni][None]
            lin = blend[:, :3, :3]
            pos = np.einsum("vij,vj->vi", lin, pos) + blend[:, :3, 3] if skinned else \
                pos @ lin[0].T + blend[0, :3, 3]
            if nrm is not None:
                nm = normal_matrices(lin)
                nrm = np.einsum("vij,vj->vi", nm, nrm) if skinned else nrm @ nm[0].T
            flip = det3(lin) < 0
            flip_tris = flip[idx.reshape(-1, 3)].sum(axis=1) >= 2 if skinned else \
                np.full(len(idx) // 3, bool(flip[0]))
            if nrm is not None:
                length = np.linalg.norm(nrm, axis=1, keepdims=True)
                nrm = nrm / np.where(length > 0, length, 1.0)
            tris = idx.reshape(-1, 3).copy()
            tris[flip_tris] = tris[flip_tris][:, ::-1]
            out.append(TriangleSet(node=ni, mesh=nd.mesh, primitive=pi, positions=pos,
                                   indices=tris.reshape(-1), normals=nrm, uvs=list(p.uvs),
                                   colors=p.colors, joints=p.joints, weights=p.weights,
                                   material=p.material, skin=nd.skin if skinned else None))
    if skipped:
        _warn_once(scene, f"{skipped} point/line primitive(s) skipped (triangles only)")
    if unweighted_total:
        _warn_once(scene, f"{unweighted_total} skinned vertices have no skin weight (all zero); "
                          "kept rigid on their mesh node, at their bind position")
    return out


def _warn_once(scene: Scene, message: str) -> None:
    """Importers call ``triangle_sets`` more than once; say each thing once."""
    if message not in scene.warnings:
        scene.warnings.append(message)


#: bytes as RGBA any base colour picture may decode to, however small its file (8192 x 8192)
PICTURE_FLOOR = 4 * 8192 * 8192


def base_color_picture(scene: Scene, material: Any) -> tuple:
    """(scene image, decoded Pillow image, problem) of a material's base colour
    texture, for importers that turn it into a game texture: ``(None, None,
    None)`` when it has none; the picture and None when it decodes; else None
    and the problem (``"not embedded"``, the decoder's message, or a picture
    too large for its bytes).

    The size in the image's header is checked before any pixel is decoded: as
    RGBA (what importers convert to) it must fit :meth:`Limits.document_budget`
    of the image's own bytes or be at most 8192 x 8192, so a small, highly
    compressed image cannot claim gigabytes of pixels (Pillow's own bomb check
    allows 178 million)."""
    ref = material.base_color_texture if material is not None else None
    if ref is None or not 0 <= ref.image < len(scene.images):
        return None, None, None
    img = scene.images[ref.image]
    if img.data is None:
        return img, None, "not embedded"
    import io
    import warnings
    from PIL import Image as PILImage
    from ..core.limits import DEFAULT_LIMITS
    # (a picture up to 8192 x 8192 decodes whatever its bytes: DCC tools write
    # 8K textures as JPEGs of a few MB, and the importers reduce them)
    budget = max(DEFAULT_LIMITS.document_budget(len(img.data)),
                 min(PICTURE_FLOOR, DEFAULT_LIMITS.max_inflated))
    try:
        with warnings.catch_warnings():     # (the size is checked here, below Pillow's)
            warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
            pic = PILImage.open(io.BytesIO(img.data))
        w, h = pic.size
        if 4 * w * h > budget:
            return img, None, (f"{w}x{h} pixels are more than its {len(img.data)} bytes may "
                               f"expand to ({budget} bytes as RGBA)")
        pic.load()
    except Exception as e:  # noqa: BLE001 - Pillow raises many kinds
        return img, None, str(e)
    return img, pic, None


def default_morph_weights(node: Node, mesh: Any) -> Any:
    """The weights a viewer holds ``node``'s morph targets at when nothing
    animates them: the node's own, else the mesh's (None when neither says)."""
    w = node.extras.get("morphWeights")
    return mesh.weights if w is None else w


def morphed(p: Primitive, weights: Any, pos: np.ndarray,
            nrm: Optional[np.ndarray] = None) -> tuple:
    """(``pos``, ``nrm``) plus each target's deltas times its weight: the shape
    at those weights (unchanged when there are no targets or every weight is
    0; a target of another length than ``pos`` adds nothing)."""
    if not p.targets or weights is None:
        return pos, nrm
    w = np.asarray(weights, dtype=np.float64).reshape(-1)[:len(p.targets)]
    if not np.any(w):
        return pos, nrm
    pos = pos.copy()
    nrm = None if nrm is None else nrm.copy()
    n = len(pos)
    for t, wk in zip(p.targets, w):
        if not wk:
            continue
        if t.positions is not None and len(t.positions) == n:
            pos += wk * np.asarray(t.positions, dtype=np.float64)
        if nrm is not None and t.normals is not None and len(t.normals) == n:
            nrm += wk * np.asarray(t.normals, dtype=np.float64)
    return pos, nrm


def _subset(p: Primitive, verts: np.ndarray, indices: np.ndarray) -> Primitive:
    """A primitive with only ``verts`` (old indices), ``indices`` given in old numbering."""
    remap = np.full(len(p.positions), -1, dtype=np.int64)
    remap[verts] = np.arange(len(verts))
    return _rows(p, verts, remap[indices])


def _rows(p: Primitive, verts: np.ndarray, indices: np.ndarray) -> Primitive:
    """A primitive whose vertex k is ``p``'s vertex ``verts[k]`` (repeats allowed),
    drawing ``indices`` (new numbering)."""

    def take(a: Any) -> Any:
        return None if a is None else np.asarray(a)[verts]

    return Primitive(positions=np.asarray(p.positions)[verts], indices=indices,
                     normals=take(p.normals), uvs=[np.asarray(u)[verts] for u in p.uvs],
                     colors=take(p.colors), joints=take(p.joints), weights=take(p.weights),
                     material=p.material, mode=p.mode, extras=dict(p.extras),
                     targets=[type(t)(name=t.name, positions=take(t.positions),
                                      normals=take(t.normals), extras=dict(t.extras))
                              for t in p.targets])


def split_by_dominant_joint(p: Primitive) -> dict:
    """Rigid parts of a skinned triangle primitive: ``{joint: Primitive}``.

    Each vertex belongs to its heaviest joint (ties: the lower joint index);
    each triangle goes to the joint most of its corners belong to (all three
    different: the first corner's).  Vertices shared by triangles of two parts
    are duplicated into both.  Joints are indices into the skin's joint list.
    """
    if p.joints is None or p.weights is None:
        raise ValueError("primitive has no skin weights")
    j = np.asarray(p.joints, dtype=np.int64)
    w = np.asarray(p.weights, dtype=np.float64)
    # heaviest weight; among equal weights the lowest joint index
    key = np.where(w == w.max(axis=1, keepdims=True), j, np.iinfo(np.int64).max)
    dominant = key.min(axis=1)
    idx = np.arange(len(j), dtype=np.int64) if p.indices is None else \
        np.asarray(p.indices, dtype=np.int64).reshape(-1)
    tris = idx[:len(idx) - len(idx) % 3].reshape(-1, 3)
    d = dominant[tris]
    owner = np.where((d[:, 1] == d[:, 2]) & (d[:, 0] != d[:, 1]), d[:, 1], d[:, 0])
    parts = {}
    for joint in np.unique(owner):
        sel = tris[owner == joint].reshape(-1)
        verts = np.unique(sel)
        parts[int(joint)] = _subset(p, verts, sel)
    return parts


def weld_primitive(p: Primitive) -> Primitive:
    """Merge vertices whose every attribute is bit-identical (positions, normals,
    UVs, colours, skin, morph deltas); returns an indexed primitive drawing the
    same triangles.  Vertex order: first appearance."""
    n = len(p.positions)
    keys = [np.asarray(p.positions)]
    for a in (p.normals, p.colors, p.joints, p.weights):
        if a is not None:
            keys.append(np.asarray(a))
    keys += [np.asarray(u) for u in p.uvs]
    for t in p.targets:
        keys += [np.asarray(a) for a in (t.positions, t.normals) if a is not None]
    first, remap = weld(*keys)
    idx = np.arange(n, dtype=np.int64) if p.indices is None else \
        np.asarray(p.indices, dtype=np.int64).reshape(-1)
    q = _subset(p, first, first[remap[idx]])
    return q


def faces_apart(p: Primitive) -> Primitive:
    """``p`` with every triangle that repeats an earlier one's vertex set (a
    double-sided pair sharing its vertices, a duplicate face), or repeats a
    vertex within itself, drawn on its own copies of its vertices.

    The triangles drawn are unchanged.  Blender keeps one face per set of
    vertices (and none with a repeated vertex), so without the copies its glTF
    import silently drops the back of a double-sided face, and an unedited
    round trip through it no longer matches the original."""
    if p.mode != 4 or p.indices is None:
        return p
    idx = np.asarray(p.indices, dtype=np.int64).reshape(-1)
    if idx.size % 3 or idx.size == 0:
        return p
    tri = idx.reshape(-1, 3)
    key = np.sort(tri, axis=1)
    if int(key[:, 2].max(initial=0)) < 1 << 21 and int(key.min(initial=0)) >= 0:
        packed = (key[:, 0] << 42) | (key[:, 1] << 21) | key[:, 2]    # one int64 per face
        _, first = np.unique(packed, return_index=True)
    else:
        _, first = np.unique(key, axis=0, return_index=True)
    apart = np.ones(len(tri), dtype=bool)
    apart[first] = False
    apart |= (key[:, 0] == key[:, 1]) | (key[:, 1] == key[:, 2])
    if not apart.any():
        return p
    n = len(p.positions)
    copies = tri[apart].reshape(-1)
    out = tri.copy()
    out[apart] = (n + np.arange(copies.size, dtype=np.int64)).reshape(-1, 3)
    return _rows(p, np.concatenate([np.arange(n, dtype=np.int64), copies]), out.reshape(-1))
