"""Re-orienting joint frames without changing what the scene draws.

Blender's glTF import turns every joint into a bone pointing at its child and
writes that bone's frame back on export: each joint's rest rotation changes by
a constant rotation, its children's transforms, its animation keys and its
skin's inverse bind matrices change with it, and the skinned mesh deforms
exactly as before.  A game skeleton whose files plug weapons into joint frames
(Knight Online) needs the original frames back; :func:`frames_like` measures
the change against an original and :func:`reorient_joints` undoes it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .model import Scene
from .ops import local_matrix, world_matrices
from .xform import decompose_matrix, matrix_to_quat, quat_conjugate, quat_multiply


def _rotation(m: np.ndarray) -> np.ndarray | None:
    """The rotation of a 3x3 matrix with positive scale (None if it shears or mirrors)."""
    u, s, vt = np.linalg.svd(m)
    r = u @ vt
    if np.linalg.det(r) < 0 or s.min() <= 0 or not np.allclose(m, r @ (vt.T * s) @ vt,
                                                                atol=1e-6 * s.max()):
        return None
    return r


def frames_like(scene: Scene, like: Scene, nodes: list[int], *, tolerance: float = 1e-6) -> dict:
    """{node: R (3x3)} for the ``nodes`` whose rest frame turned against the node
    of the same name in ``like``: ``R_scene = R_like · R`` in world space.
    Nodes without a namesake, or whose turn is below ``tolerance``, are left out."""
    world, lworld = world_matrices(scene), world_matrices(like)
    by_name: dict = {}
    for i, n in enumerate(like.nodes):
        by_name.setdefault(n.name, i)
    out = {}
    for n in nodes:
        j = by_name.get(scene.nodes[n].name)
        if j is None:
            continue
        a, b = _rotation(world[n][:3, :3]), _rotation(lworld[j][:3, :3])
        if a is None or b is None:
            continue
        turn = b.T @ a
        if np.abs(turn - np.eye(3)).max() > tolerance:
            out[n] = turn
    return out


def _uniform(scale: Any) -> bool:
    s = np.ones(3) if scale is None else np.asarray(scale, np.float64)
    return bool(np.ptp(s) <= 1e-4 * max(1.0, float(np.abs(s).max())))   # (float noise)


def reorient_joints(scene: Scene, turns: dict) -> bool:
    """Turn each node ``n`` of ``turns`` back by its ``R`` (world frame ``W · R⁻¹``
    about its own origin), keeping every other node's world transform, every
    animated pose and every skin's deformation.  Returns False (scene untouched)
    when a turned node has a non-uniform scale, which a turn would shear."""
    if not turns:
        return False
    for n in turns:
        nd = scene.nodes[n]
        if nd.matrix is not None:
            _, _, s = decompose_matrix(np.asarray(nd.matrix, np.float64))
            if not _uniform(s):
                return False
        elif not _uniform(nd.scale):
            return False
    for a in scene.animations:
        for ch in a.channels:
            if ch.node in turns and ch.path == "scale" and not all(
                    _uniform(v) for v in np.asarray(ch.values, np.float64).reshape(-1, 3)):
                return False
    parents = scene.parents()
    g = {n: np.asarray(r, np.float64).T for n, r in turns.items()}     # W' = W · G
    gq = {n: matrix_to_quat(m) for n, m in g.items()}
    ident = np.eye(3)
    for i, nd in enumerate(scene.nodes):
        p = parents[i]
        gp, gn = g.get(p, ident), g.get(i, ident)
        if p not in g and i not in g:
            continue
        if nd.matrix is not None:
            m = local_matrix(nd)
            m[:3, :3] = gp.T @ m[:3, :3] @ gn
            m[:3, 3] = gp.T @ m[:3, 3]
            nd.matrix = m
            continue
        if nd.translation is not None:
            nd.translation = gp.T @ np.asarray(nd.translation, np.float64)
        q = np.array([0.0, 0, 0, 1]) if nd.rotation is None else np.asarray(nd.rotation, np.float64)
        nd.rotation = _turned(q[None], gq.get(p), gq.get(i))[0]
    for a in scene.animations:
        for ch in a.channels:
            p = parents[ch.node] if 0 <= ch.node < len(parents) else None
            if ch.path == "translation" and p in g:
                v = np.asarray(ch.values, np.float64).reshape(-1, 3)
                ch.values = (v @ g[p]).astype(np.asarray(ch.values).dtype)   # gp.T @ v per row
            elif ch.path == "rotation" and (p in g or ch.node in g):
                v = np.asarray(ch.values, np.float64).reshape(-1, 4)
                ch.values = _turned(v, gq.get(p), gq.get(ch.node)).astype(
                    np.asarray(ch.values).dtype)
    for sk in scene.skins:
        if sk.inverse_bind_matrices is None:
            continue
        ibm = np.array(sk.inverse_bind_matrices, np.float64)
        for k, j in enumerate(sk.joints):
            if j in g:                                   # (W G)^-1 = G^-1 W^-1
                ibm[k, :3, :] = g[j].T @ ibm[k, :3, :]
        sk.inverse_bind_matrices = ibm
    return True


def _turned(q: np.ndarray, parent: np.ndarray | None, own: np.ndarray | None) -> np.ndarray:
    """``parent⁻¹ · q · own`` per row (quaternions xyzw; None is identity)."""
    out = q
    if parent is not None:
        out = quat_multiply(np.broadcast_to(quat_conjugate(parent), out.shape), out)
    if own is not None:
        out = quat_multiply(out, np.broadcast_to(own, out.shape))
    return out
