"""Transform helpers: quaternions (x, y, z, w, Hamilton), 4x4 matrices (math
layout, column vectors), axis conversions.  All vectorised over leading axes."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

#: quaternion (x, y, z, w) turning Z-up data Y-up: -90 degrees about X
Z_UP_TO_Y_UP = (-0.7071067811865476, 0.0, 0.0, 0.7071067811865476)
#: Z-up, +Y-forward data to glTF Y-up, +Z-forward: (x, y, z) -> (-x, z, y)
Z_UP_Y_FORWARD_TO_GLTF = (0.0, 0.7071067811865476, 0.7071067811865476, 0.0)
#: 180 degrees about X: Y-down data to Y-up, no mirroring (+Z becomes -Z)
Y_DOWN_TO_Y_UP = (1.0, 0.0, 0.0, 0.0)
#: 180 degrees about Z: Y-down, +Z-forward data to glTF Y-up with the front
#: still toward +Z: (x, y, z) -> (-x, -y, z)
Y_DOWN_Z_FORWARD_TO_GLTF = (0.0, 0.0, 1.0, 0.0)
IDENTITY_QUAT = (0.0, 0.0, 0.0, 1.0)


def _f64(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


# ---- quaternions -------------------------------------------------------------

def quat_normalize(q: Any) -> np.ndarray:
    """Unit quaternions; zero-length ones become identity."""
    q = _f64(q)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    out = np.where(n > 1e-12, q / np.where(n > 1e-12, n, 1.0), np.array(IDENTITY_QUAT))
    return out


def quat_conjugate(q: Any) -> np.ndarray:
    q = _f64(q).copy()
    q[..., :3] *= -1.0
    return q


def quat_multiply(a: Any, b: Any) -> np.ndarray:
    """Hamilton product ``a ⊗ b`` (apply ``b`` first, then ``a``)."""
    a, b = _f64(a), _f64(b)
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ], axis=-1)


def quat_from_axis_angle(axis: Any, angle: Any) -> np.ndarray:
    """``angle`` in radians about ``axis`` (normalised here)."""
    axis = _f64(axis)
    axis = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    half = _f64(angle)[..., None] / 2.0
    return np.concatenate([axis * np.sin(half), np.cos(half)], axis=-1)


def quat_from_euler(angles: Any, order: str = "XYZ", degrees: bool = False) -> np.ndarray:
    """Quaternion of Euler angles (..., 3) given as (about X, about Y, about Z).

    ``order`` names the axes in the order they are APPLIED to a vector
    (intrinsic-to-extrinsic confusion avoided): "XYZ" means rotate about X
    first, then Y, then Z, i.e. ``q = qZ ⊗ qY ⊗ qX`` (FBX eEulerXYZ).
    """
    ang = _f64(angles)
    if degrees:
        ang = np.radians(ang)
    axes = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}
    idx = {"X": 0, "Y": 1, "Z": 2}
    q = np.broadcast_to(np.array(IDENTITY_QUAT), ang.shape[:-1] + (4,)).copy()
    for ax in order.upper():
        qa = quat_from_axis_angle(np.broadcast_to(axes[ax], ang.shape[:-1] + (3,)),
                                  ang[..., idx[ax]])
        q = quat_multiply(qa, q)
    return q


def quat_to_matrix(q: Any) -> np.ndarray:
    """(..., 4) unit quaternions to (..., 3, 3) rotation matrices (column vectors)."""
    q = quat_normalize(q)
    x, y, z, w = np.moveaxis(q, -1, 0)
    m = np.empty(q.shape[:-1] + (3, 3))
    m[..., 0, 0] = 1 - 2 * (y * y + z * z)
    m[..., 0, 1] = 2 * (x * y - z * w)
    m[..., 0, 2] = 2 * (x * z + y * w)
    m[..., 1, 0] = 2 * (x * y + z * w)
    m[..., 1, 1] = 1 - 2 * (x * x + z * z)
    m[..., 1, 2] = 2 * (y * z - x * w)
    m[..., 2, 0] = 2 * (x * z - y * w)
    m[..., 2, 1] = 2 * (y * z + x * w)
    m[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return m


def matrix_to_quat(m: Any) -> np.ndarray:
    """(..., 3, 3) (or 4x4; upper-left used) rotation matrices to unit quaternions."""
    m = _f64(m)[..., :3, :3]
    tr = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    # Shepperd's method, branch-free: pick the largest of w, x, y, z per matrix.
    cand = np.stack([tr, m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]], axis=-1)
    k = np.argmax(cand, axis=-1)
    q = np.empty(m.shape[:-2] + (4,))
    r = np.sqrt(np.maximum(1.0 + 2.0 * np.take_along_axis(cand, k[..., None], -1)[..., 0]
                           - tr, 1e-300))
    s = 0.5 / r
    # k == 0 (w largest)
    w0 = 0.5 * r
    q0 = np.stack([(m[..., 2, 1] - m[..., 1, 2]) * s, (m[..., 0, 2] - m[..., 2, 0]) * s,
                   (m[..., 1, 0] - m[..., 0, 1]) * s, w0], -1)
    q1 = np.stack([0.5 * r, (m[..., 0, 1] + m[..., 1, 0]) * s,
                   (m[..., 0, 2] + m[..., 2, 0]) * s, (m[..., 2, 1] - m[..., 1, 2]) * s], -1)
    q2 = np.stack([(m[..., 0, 1] + m[..., 1, 0]) * s, 0.5 * r,
                   (m[..., 1, 2] + m[..., 2, 1]) * s, (m[..., 0, 2] - m[..., 2, 0]) * s], -1)
    q3 = np.stack([(m[..., 0, 2] + m[..., 2, 0]) * s, (m[..., 1, 2] + m[..., 2, 1]) * s,
                   0.5 * r, (m[..., 1, 0] - m[..., 0, 1]) * s], -1)
    q = np.choose(k[..., None], [q0, q1, q2, q3])
    q = np.where(q[..., 3:4] < 0, -q, q)
    return quat_normalize(q)


def quat_continuous(q: Any) -> np.ndarray:
    """Flip signs along the first axis of a key sequence (K, 4) so that
    consecutive keys take the short way (glTF LINEAR slerps ``q`` as given)."""
    q = _f64(q).copy()
    if len(q) < 2:
        return q
    dots = np.einsum("ij,ij->i", q[1:], q[:-1])
    flips = np.concatenate([[False], dots < 0])
    sign = np.where(np.logical_xor.accumulate(flips), -1.0, 1.0)
    return q * sign[:, None]


def quat_slerp(a: Any, b: Any, t: Any) -> np.ndarray:
    """Shortest-path spherical interpolation, vectorised."""
    a, b = quat_normalize(a), quat_normalize(b)
    t = _f64(t)[..., None]
    d = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(d < 0, -b, b)
    d = np.abs(d)
    theta = np.arccos(np.clip(d, -1.0, 1.0))
    sin = np.sin(theta)
    small = sin < 1e-6
    wa = np.where(small, 1.0 - t, np.sin((1.0 - t) * theta) / np.where(small, 1.0, sin))
    wb = np.where(small, t, np.sin(t * theta) / np.where(small, 1.0, sin))
    return quat_normalize(wa * a + wb * b)


# ---- matrices ----------------------------------------------------------------

def trs_to_matrix(translation: Any = None, rotation: Any = None, scale: Any = None) -> np.ndarray:
    """``T · R · S`` as (..., 4, 4)."""
    shapes = [np.shape(x)[:-1] for x in (translation, rotation, scale) if x is not None]
    lead = np.broadcast_shapes(*shapes) if shapes else ()
    m = np.zeros(lead + (4, 4))
    r = quat_to_matrix(rotation) if rotation is not None else np.eye(3)
    s = _f64(scale) if scale is not None else np.ones(3)
    m[..., :3, :3] = r * s[..., None, :]
    if translation is not None:
        m[..., :3, 3] = _f64(translation)
    m[..., 3, 3] = 1.0
    return m


def decompose_matrix(m: Any) -> tuple:
    """(..., 4, 4) affine matrices to (translation, rotation xyzw, scale).

    Exact for T·R·S with positive or one negative-determinant scale (the sign
    goes to scale x).  Shear cannot be represented and is lost.
    """
    m = _f64(m)
    t = m[..., :3, 3].copy()
    cols = m[..., :3, :3]
    s = np.linalg.norm(cols, axis=-2)
    det = np.linalg.det(cols)
    s[..., 0] = np.where(det < 0, -s[..., 0], s[..., 0])
    r = cols / np.where(s == 0, 1.0, s)[..., None, :]
    return t, matrix_to_quat(r), s


def inverse_affine(m: Any) -> tuple:
    """(inverses (..., 4, 4), collapsed (...,) bool) of affine matrices that may
    not be invertible.

    A scale of 0 (a part hidden by scaling it away, a common glTF trick) makes a
    world matrix singular; importers that take geometry into such a node's frame
    still need an inverse.  A collapsed matrix (a singular value at most 1e-14
    of its largest, or all zero) is inverted with its collapsed directions given
    unit length instead, so ``inverse @ m`` flattens those directions as the
    matrix draws them and leaves the others exact; ``collapsed`` marks them."""
    m = _f64(m)
    out = np.zeros_like(m)
    u, s, vt = np.linalg.svd(m[..., :3, :3])
    collapsed = s <= s[..., :1] * 1e-14
    s = np.where(collapsed, 1.0, s)
    lin_inv = np.swapaxes(vt, -1, -2) @ (np.swapaxes(u, -1, -2) / s[..., :, None])
    out[..., :3, :3] = lin_inv
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", lin_inv, m[..., :3, 3])
    out[..., 3, 3] = 1.0
    exact = ~collapsed.any(axis=-1)
    if exact.any():          # np.linalg.inv where it works: the same bits as before
        try:
            out[exact] = np.linalg.inv(m[exact])
        except np.linalg.LinAlgError:
            # a bottom row that is not 0 0 0 1 (a hostile "affine" matrix) can make
            # the 4x4 singular while its 3x3 part is not: that one keeps the
            # affine inverse, the others still np.linalg.inv's
            done, given = out[exact], m[exact]
            for k in range(len(given)):
                try:
                    done[k] = np.linalg.inv(given[k])
                except np.linalg.LinAlgError:
                    pass
            out[exact] = done
    return out, ~exact


def mat4_from_gltf(values: Sequence[float]) -> np.ndarray:
    """16 floats in glTF (column-major) order to a math-layout (4, 4) matrix.
    The same call reads Direct3D row-major row-vector matrices in file order."""
    return _f64(values).reshape(values_shape(values) + (4, 4)).swapaxes(-1, -2)


def values_shape(values: Any) -> tuple:
    return np.shape(values)[:-1]


def mat4_to_gltf(m: Any) -> np.ndarray:
    """Math-layout (..., 4, 4) to (..., 16) column-major floats."""
    return _f64(m).swapaxes(-1, -2).reshape(np.shape(m)[:-2] + (16,))


def transform_points(m: Any, p: Any) -> np.ndarray:
    """Apply (4, 4) ``m`` to (N, 3) points."""
    m, p = _f64(m), _f64(p)
    return p @ m[:3, :3].T + m[:3, 3]


# ---- handedness / axes -------------------------------------------------------

_MIRROR_Z = np.diag([1.0, 1.0, -1.0, 1.0])


def mirror_z(v: Any) -> np.ndarray:
    """Positions/normals/translations (..., 3): (x, y, z) -> (x, y, -z).
    Left-handed Y-up (Direct3D) to glTF.  Remember to flip triangle winding."""
    out = np.array(v, dtype=np.result_type(np.asarray(v).dtype, np.float32), copy=True)
    out[..., 2] *= -1
    return out


def mirror_z_quat(q: Any) -> np.ndarray:
    """Rotations under the Z mirror: (x, y, z, w) -> (-x, -y, z, w)."""
    out = np.array(q, dtype=np.float64, copy=True)
    out[..., :2] *= -1
    return out


def mirror_z_matrix(m: Any) -> np.ndarray:
    """``S · M · S`` with ``S = diag(1, 1, -1, 1)``, for (..., 4, 4)."""
    return _MIRROR_Z @ _f64(m) @ _MIRROR_Z


_MIRROR_X = np.diag([-1.0, 1.0, 1.0, 1.0])


def mirror_x(v: Any) -> np.ndarray:
    """Positions/normals/translations (..., 3): (x, y, z) -> (-x, y, z).
    Left-handed Y-up data whose front is +Z (the N3 engine) to glTF, keeping
    the front on +Z.  Its own inverse.  Remember to flip triangle winding."""
    out = np.array(v, dtype=np.result_type(np.asarray(v).dtype, np.float32), copy=True)
    out[..., 0] *= -1
    return out


def mirror_x_quat(q: Any) -> np.ndarray:
    """Rotations under the X mirror: (x, y, z, w) -> (x, -y, -z, w)."""
    out = np.array(q, dtype=np.float64, copy=True)
    out[..., 1:3] *= -1
    return out


def mirror_x_matrix(m: Any) -> np.ndarray:
    """``S · M · S`` with ``S = diag(-1, 1, 1, 1)``, for (..., 4, 4)."""
    return _MIRROR_X @ _f64(m) @ _MIRROR_X


def z_up_to_y_up(v: Any) -> np.ndarray:
    """(x, y, z) -> (x, z, -y): a proper rotation (winding unchanged)."""
    v = np.asarray(v)
    out = np.empty_like(v, dtype=np.result_type(v.dtype, np.float32))
    out[..., 0] = v[..., 0]
    out[..., 1] = v[..., 2]
    out[..., 2] = -v[..., 1]
    return out

