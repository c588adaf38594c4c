"""Building blocks of the FBX writer: typed property tuples, nodes, Properties70
entries, KTime, Euler angles and object ids, shaped as Autodesk's exporter writes them."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ....scene.xform import quat_normalize, quat_to_matrix
from ..model import FbxArray, FbxNode

KTIME_PER_SECOND = 46186158000
#: GlobalSettings TimeMode for common rates (FbxTime::EMode); others are eCustom (14)
TIME_MODES = {120.0: 1, 100.0: 2, 60.0: 3, 50.0: 4, 48.0: 5, 30.0: 6, 25.0: 10, 24.0: 11,
              1000.0: 12}
FLAG_CONSTANT, FLAG_LINEAR = 0x00000002, 0x00000004
_COMPRESS_MIN = 1024          # raw array bytes at or above which the SDK deflates


# ---- node building helpers ---------------------------------------------------------

def _n(name: str, *props: tuple, children: Optional[list] = None) -> FbxNode:
    return FbxNode(name.encode(), list(props), children)


def _s(text: str | bytes) -> tuple:
    return ("S", text.encode("utf-8") if isinstance(text, str) else bytes(text))


def _i(v: int) -> tuple:
    return ("I", int(v))


def _l(v: int) -> tuple:
    return ("L", int(v))


def _d(v: float) -> tuple:
    return ("D", float(v))


def _arr(code: str, values: Any) -> tuple:
    dt = {"d": np.float64, "f": np.float32, "i": np.int32, "l": np.int64}[code]
    a = np.ascontiguousarray(np.asarray(values, dtype=dt).reshape(-1))
    enc = 1 if a.nbytes >= _COMPRESS_MIN else 0
    return (code, FbxArray(code, a, encoding=enc, level=1))


def _obj_name(name: str, cls: str) -> tuple:
    return ("S", name.encode("utf-8", "replace").replace(b"\x00", b"") + b"\x00\x01"
            + cls.encode())


def _p(name: str, ptype: str, label: str, flags: str, *values: tuple) -> FbxNode:
    return _n("P", _s(name), _s(ptype), _s(label), _s(flags), *values)


def _p_vec(name: str, ptype: str, label: str, flags: str, v: Any) -> FbxNode:
    return _p(name, ptype, label, flags, *[_d(x) for x in np.asarray(v, np.float64).reshape(-1)])


def _props70(*items: FbxNode) -> FbxNode:
    return _n("Properties70", children=list(items))


def _ktime(seconds: Any) -> np.ndarray:
    return np.round(np.asarray(seconds, dtype=np.float64) * KTIME_PER_SECOND).astype(np.int64)


def euler_xyz_degrees(q: Any) -> np.ndarray:
    """Quaternions (..., 4) to FBX eEulerXYZ angles in degrees (rotate about X,
    then Y, then Z: ``R = Rz · Ry · Rx``), the inverse of
    ``quat_from_euler(angles, "XYZ", degrees=True)``."""
    m = quat_to_matrix(quat_normalize(q))
    sy = np.clip(-m[..., 2, 0], -1.0, 1.0)
    y = np.arcsin(sy)
    gimbal = np.abs(sy) > 1 - 1e-12
    x = np.where(gimbal, 0.0, np.arctan2(m[..., 2, 1], m[..., 2, 2]))
    z = np.where(gimbal, np.arctan2(-m[..., 0, 1], m[..., 1, 1]),
                 np.arctan2(m[..., 1, 0], m[..., 0, 0]))
    return np.degrees(np.stack([x, y, z], axis=-1))


def unique_names(names: list) -> list:
    """Names made unique the way Blender does (``walk``, ``walk.001``...), so a
    stack keeps one name in every application that reads the file."""
    seen: set = set()
    out = []
    for n in names:
        cand, k = n, 0
        while cand in seen:
            k += 1
            cand = f"{n}.{k:03d}"
        seen.add(cand)
        out.append(cand)
    return out


# ---- the writer ----------------------------------------------------------------------

class _Ids:
    def __init__(self) -> None:
        self.next = 1_000_000_000

    def new(self) -> int:
        self.next += 1
        return self.next


