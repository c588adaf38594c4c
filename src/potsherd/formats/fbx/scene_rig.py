"""FBX node transforms as ufbx and the FBX SDK evaluate them, made into glTF TRS.

Scale inheritance (``InheritType``): 1 (RSrs) is the plain matrix product;
0 (RrSs, the FBX template default, MotionBuilder's and 3ds Max's) scales
component-wise: the child's translation is scaled by its parent's scale
vector and its scale multiplied by the scale its "scale parent" carries, then
placed in the parent's *unscaled* frame, so a non-uniformly scaled parent does
not shear its rotated children; 2 (Rrs, Maya's segment scale compensate)
ignores the immediate parent's scale.  glTF only has the plain product, so
each node's glTF local is ``inverse(parent's glTF world) · FBX world``: node
world positions match FBX exactly, and only a shear FBX itself produces is
lost.  Everything is vectorised over a leading time axis (length 1 for the
rest pose, the sample grid for an animation); nodes that do not change over
time stay length 1.

Animation layers blend as ufbx blends them: the stack's first layer sets the
value, each later layer that animates the property combines with the result by
its weight (``Weight``, percent) and ``BlendMode``: 0 additive (translation
added, scale multiplied by ``|v|^w``, rotation composed with a slerp from
identity), 1 override (replace), 2 override-passthrough (a weighted blend:
lerp, geometric scale, slerp).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...scene import decompose_matrix, quat_from_euler, quat_multiply, quat_slerp, trs_to_matrix

NORMAL, COMPONENTWISE_SCALE, IGNORE_PARENT_SCALE = "RSrs", "RrSs", "Rrs"
IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])


def inherit_mode(value: float | None) -> str:
    """The FBX ``InheritType`` enum (0 RrSs, 1 RSrs, 2 Rrs) as ufbx reads it:
    anything else, or no value at all, is the plain product."""
    if value == 0:
        return COMPONENTWISE_SCALE
    if value == 2:
        return IGNORE_PARENT_SCALE
    return NORMAL


class NodeState:
    """One node over time: its FBX world, world without its own scale, the
    scale it hands to children that inherit component-wise, and the glTF
    worlds its children attach to (``gltf_world`` for plain children,
    ``gltf_unscaled`` for RrSs/Rrs children; the same unless the node is split).
    ``world_exact`` / ``unscaled_exact`` say that ``gltf_world`` is ``world``
    (``gltf_unscaled`` is ``unscaled``) exactly: a child's FBX local is then
    its glTF local, with no decomposition."""

    __slots__ = ("world", "unscaled", "inherit_scale", "scale_parent", "gltf_world",
                 "gltf_unscaled", "split", "world_exact", "unscaled_exact")

    def __init__(self, world, unscaled, inherit_scale, scale_parent, gltf_world,
                 gltf_unscaled, split, world_exact=False, unscaled_exact=False) -> None:
        self.world = world
        self.unscaled = unscaled
        self.inherit_scale = inherit_scale
        self.scale_parent = scale_parent
        self.gltf_world = gltf_world
        self.gltf_unscaled = gltf_unscaled
        self.split = split
        self.world_exact = world_exact
        self.unscaled_exact = unscaled_exact


def evaluate(order: list, parent_of: dict, mode_of: dict, local_trs: dict,
             split: frozenset | set = frozenset()) -> tuple[dict, dict, dict]:
    """FBX worlds and glTF locals of nodes ``order`` (parents first).

    ``local_trs[id]`` is ``(t (T, 3), q (T, 4), s (T, 3))`` with T = 1 for a
    constant node; ``parent_of[id]`` the parent id or None; ``mode_of[id]`` an
    inherit mode.  A node in ``split`` becomes two glTF nodes: itself without
    its scale (its RrSs/Rrs children attach there) and a scale helper child
    (its mesh, joint and plain children attach there), which keeps a
    non-uniformly scaled parent from shearing such children, exactly as FBX
    evaluates them.  Returns ``(state by id, glTF (t, q, s) by id, helper
    scale by id for split nodes)``.

    Nodes are evaluated a hierarchy level at a time: the nodes of one level
    that take the same path with inputs of the same shapes are stacked on a
    new leading axis and computed together (elementwise arithmetic and
    per-matrix products and inverses, so the same bits as node by node).
    """
    depth: dict = {}
    levels: list = []
    for nid in order:
        pid = parent_of.get(nid)
        d = depth[pid] + 1 if pid in depth else 0
        depth[nid] = d
        if d == len(levels):
            levels.append([])
        levels[d].append(nid)
    states: dict = {}
    gltf: dict = {}
    helper: dict = {}
    for nodes in levels:
        groups: dict = {}
        for nid in nodes:
            job = _Job(nid, local_trs[nid], states.get(parent_of.get(nid)),
                       mode_of.get(nid, NORMAL), nid in split)
            groups.setdefault(job.key(), []).append(job)
        for jobs in groups.values():
            _evaluate_group(jobs, states, gltf, helper)
    # the dictionaries in the order of ``order``, as node-by-node evaluation fills them
    return ({nid: states[nid] for nid in order}, {nid: gltf[nid] for nid in order},
            {nid: helper[nid] for nid in order if nid in helper})


class _Job:
    """One node's inputs and the path its evaluation takes."""

    __slots__ = ("nid", "t", "q", "s", "parent", "case", "split", "scale_parent", "ref",
                 "ref_exact")

    def __init__(self, nid, trs, parent, mode, is_split) -> None:
        self.nid = nid
        self.t, self.q, self.s = trs
        self.parent = parent
        self.split = is_split
        self.scale_parent = None
        if parent is None:
            self.case, self.ref, self.ref_exact = "root", None, True
        elif mode == NORMAL:
            self.case, self.ref, self.ref_exact = "normal", parent.gltf_world, parent.world_exact
        else:
            self.case = "scaled"
            self.scale_parent = parent if mode == COMPONENTWISE_SCALE else parent.scale_parent
            self.ref, self.ref_exact = parent.gltf_unscaled, parent.unscaled_exact

    def inputs(self) -> tuple:
        """The arrays the evaluation reads (stacked per group)."""
        p = self.parent
        base = (self.t, self.q, self.s)
        if self.case == "root":
            return base
        ref = () if self.ref_exact else (self.ref,)
        if self.case == "normal":
            return base + (p.world,) + ref
        # no scale parent: ones of the scale's rank (the product is ``s`` itself)
        ps = self.scale_parent.inherit_scale if self.scale_parent is not None else \
            np.ones((1,) * (np.ndim(self.s) - 1) + (3,))
        return base + (p.unscaled, p.inherit_scale, ps) + ref

    def key(self) -> tuple:
        return (self.case, self.split, self.ref_exact,
                tuple(np.shape(x) for x in self.inputs()))


def _evaluate_group(jobs: list, states: dict, gltf: dict, helper: dict) -> None:
    """:func:`evaluate` of nodes that take the same path with inputs of the
    same shapes, stacked on a new leading axis."""
    first = jobs[0]
    cols = [np.stack([np.asarray(x, dtype=np.float64) for x in xs])
            for xs in zip(*(j.inputs() for j in jobs))]
    t, q, s = cols[:3]
    if first.case == "root":
        world, unscaled = trs_to_matrix(t, q, s), trs_to_matrix(t, q, None)
        inherit, lt, ls = s, t, s
    elif first.case == "normal":
        parent_world = cols[3]
        world = parent_world @ trs_to_matrix(t, q, s)
        unscaled = parent_world @ trs_to_matrix(t, q, None)
        inherit, lt, ls = s, t, s
    else:
        parent_unscaled, parent_inherit, ps = cols[3:6]
        ls = s * ps
        lt = t * parent_inherit
        world = parent_unscaled @ trs_to_matrix(lt, q, ls)
        unscaled = parent_unscaled @ trs_to_matrix(lt, q, None)
        inherit = ls
    is_split = first.split
    target = unscaled if is_split else world
    if first.ref_exact:  # the FBX local is the glTF one
        local = (lt, q, np.ones_like(ls) if is_split else ls)
        realised = target
        exact = np.ones(len(jobs), dtype=bool)
    else:
        ref = cols[-1]
        local = decompose_matrix(np.linalg.inv(ref) @ target)
        realised = ref @ trs_to_matrix(*local)
        close = np.isclose(realised, target, rtol=1e-9, atol=1e-9, equal_nan=False)
        exact = close.reshape(len(jobs), -1).all(axis=1)
    loose = np.flatnonzero(~exact)
    scaled_world = {}
    if is_split and len(loose):
        helper_scale = trs_to_matrix(scale=ls[loose])
        scaled_world = dict(zip(loose.tolist(), realised[loose] @ helper_scale))
    for g, job in enumerate(jobs):
        nid = job.nid
        w, u = world[g], unscaled[g]
        node_exact = bool(exact[g])
        real = (u if is_split else w) if node_exact else realised[g]
        if is_split:
            helper[nid] = ls[g]
            gltf_unscaled = real
            gltf_world = w if node_exact else scaled_world[g]
            st = NodeState(w, u, inherit[g], job.scale_parent, gltf_world, gltf_unscaled, True,
                           world_exact=node_exact, unscaled_exact=node_exact)
        else:
            st = NodeState(w, u, inherit[g], job.scale_parent, real, real, False,
                           world_exact=node_exact, unscaled_exact=False)
        states[nid] = st
        gltf[nid] = tuple(x[g] for x in local)


# ---- animation layers --------------------------------------------------------

def layer_blend(prop: str, result: np.ndarray, value: np.ndarray, weight: Any,
                blend_mode: int) -> np.ndarray:
    """``result`` combined with one later layer's ``value`` (both (T, 3), or
    (T, 4) quaternions for ``Lcl Rotation``: ufbx composes rotations in
    quaternion space, converting back to Euler in between, which does not
    change the rotation).  ``weight`` is a number or a (T,) array (an
    animated layer weight), 0..1."""
    w = np.clip(np.asarray(weight, dtype=np.float64), 0.0, 1.0)
    wv = w[..., None] if w.ndim else w
    if blend_mode == 0:  # additive
        if prop == "Lcl Scaling":
            return result * _pow_abs(value, wv)
        if prop == "Lcl Rotation":
            ident = np.broadcast_to(IDENTITY, value.shape)
            return quat_multiply(result, quat_slerp(ident, value, np.broadcast_to(
                w, value.shape[:-1])))
        return result + value * wv
    if blend_mode == 2:  # override passthrough
        if prop == "Lcl Scaling":
            return _pow_abs(result, 1.0 - wv) * _pow_abs(value, wv)
        if prop == "Lcl Rotation":
            a, b = np.broadcast_arrays(result, value)
            return quat_slerp(a, b, np.broadcast_to(w, a.shape[:-1]))
        return result * (1.0 - wv) + value * wv
    return value  # override (1) and unknown modes replace


def _pow_abs(v: np.ndarray, e: Any) -> np.ndarray:
    """``sign(v) |v|^e`` with ufbx's ends: 1 at e <= 0, v at e >= 1."""
    e = np.broadcast_to(np.asarray(e, dtype=np.float64), np.shape(v))
    mid = np.sign(v) * np.abs(v) ** np.clip(e, 0.0, 1.0)
    return np.where(e <= 0.0, 1.0, np.where(e >= 1.0, v, mid))


def euler_quat(r: np.ndarray, order: str) -> np.ndarray:
    return quat_from_euler(np.asarray(r, dtype=np.float64), order, degrees=True)


def quat_euler(q: np.ndarray, order: str) -> np.ndarray:
    """Euler angles in degrees (the inverse of :func:`euler_quat`): ``order``
    names the axes in the order they apply, R = R3 · R2 · R1."""
    r = trs_to_matrix(rotation=np.asarray(q, dtype=np.float64))[..., :3, :3]
    i, j, k = ("XYZ".index(order[0]), "XYZ".index(order[1]), "XYZ".index(order[2]))
    parity = 1.0 if (j - i) % 3 == 1 else -1.0
    out = np.zeros(r.shape[:-2] + (3,))
    out[..., j] = np.arcsin(np.clip(-parity * r[..., k, i], -1.0, 1.0))
    out[..., i] = np.arctan2(parity * r[..., k, j], r[..., k, k])
    out[..., k] = np.arctan2(parity * r[..., j, i], r[..., i, i])
    return np.degrees(out)


def varies(a: np.ndarray, tol: float = 1e-9) -> bool:
    """Whether a (T, k) sample array is not constant."""
    return len(a) > 1 and bool(np.any(np.abs(a - a[:1]) > tol))


def as_time_series(x: Any, length: int) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    return np.broadcast_to(a, (length,) + a.shape[1:]) if a.shape[0] == 1 else a
