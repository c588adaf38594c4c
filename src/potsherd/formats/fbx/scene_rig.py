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
    ``gltf_unscaled`` for RrSs/Rrs children; the same unless the node is split)."""

    __slots__ = ("world", "unscaled", "inherit_scale", "scale_parent", "gltf_world",
                 "gltf_unscaled", "split")

    def __init__(self, world, unscaled, inherit_scale, scale_parent, gltf_world,
                 gltf_unscaled, split) -> None:
        self.world = world
        self.unscaled = unscaled
        self.inherit_scale = inherit_scale
        self.scale_parent = scale_parent
        self.gltf_world = gltf_world
        self.gltf_unscaled = gltf_unscaled
        self.split = split


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
    """
    states: dict = {}
    gltf: dict = {}
    helper: dict = {}
    for nid in order:
        t, q, s = local_trs[nid]
        parent = states.get(parent_of.get(nid))
        mode = mode_of.get(nid, NORMAL) if parent is not None else NORMAL
        if parent is None:
            world = trs_to_matrix(t, q, s)
            unscaled = trs_to_matrix(t, q, None)
            inherit, scale_parent = s, None
            ref, ref_exact, lt, ls = None, True, t, s
        elif mode == NORMAL:
            world = parent.world @ trs_to_matrix(t, q, s)
            unscaled = parent.world @ trs_to_matrix(t, q, None)
            inherit, scale_parent = s, None
            ref = parent.gltf_world
            ref_exact, lt, ls = ref is parent.world, t, s
        else:
            scale_parent = parent if mode == COMPONENTWISE_SCALE else parent.scale_parent
            ps = scale_parent.inherit_scale if scale_parent is not None else np.ones(3)
            ls = s * ps
            lt = t * parent.inherit_scale
            world = parent.unscaled @ trs_to_matrix(lt, q, ls)
            unscaled = parent.unscaled @ trs_to_matrix(lt, q, None)
            inherit = ls
            ref = parent.gltf_unscaled
            ref_exact = ref is parent.unscaled
        is_split = nid in split
        target = unscaled if is_split else world
        if ref_exact:  # the FBX local is the glTF one
            local = (lt, q, np.ones_like(ls) if is_split else ls)
            realised = target
        else:
            local = decompose_matrix(np.linalg.inv(ref) @ target)
            realised = ref @ trs_to_matrix(*local)
            if np.allclose(realised, target, rtol=1e-9, atol=1e-9):
                realised = target
        if is_split:
            helper[nid] = ls
            gltf_unscaled = realised
            gltf_world = world if realised is unscaled else realised @ trs_to_matrix(scale=ls)
        else:
            gltf_unscaled = gltf_world = realised
        st = NodeState(world, unscaled, inherit, scale_parent, gltf_world,
                       gltf_world if not is_split else gltf_unscaled, is_split)
        if not is_split:
            st.gltf_unscaled = gltf_world
        states[nid] = st
        gltf[nid] = local
    return states, gltf, helper


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
