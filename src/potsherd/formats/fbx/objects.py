"""FBX objects as the scene builder reads them: checked number arrays, Properties70, the
local transform of a Model (pivots, pre/post rotation, rotation order), axis settings."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.errors import ValueFormatError
from ...scene import decompose_matrix, quat_from_euler, trs_to_matrix
from .model import FbxNode


KTIME_PER_SECOND = 46186158000


ROTATION_ORDERS = ("XYZ", "XZY", "YZX", "YXZ", "ZXY", "ZYX", "XYZ")


def _numbers(values: Any, path: str) -> np.ndarray:
    """Property values or an array as a numeric numpy array (its own dtype).

    ASCII files type a word where a number belongs as a string; that (or a
    nested array, or an integer beyond 64 bits) is a ValueFormatError naming
    the node path, so no later cast or ``float()`` meets it."""
    if hasattr(values, "values"):
        values = values.values
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError, OverflowError):
        arr = None
    if arr is None or arr.dtype.kind not in "biuf" or arr.ndim > 1:
        shown = [v for _, v in zip(range(3), values)] if isinstance(values, (list, tuple)) \
            else values
        raise ValueFormatError(f"values {str(shown)[:60]} are not numbers",
                               path=path) from None
    return arr


def _number(values: Any, path: str) -> float:
    """The first of a property's values as a float (see :func:`_numbers`)."""
    arr = _numbers(values, path)
    if not arr.size:
        raise ValueFormatError("property holds no value", path=path)
    return float(arr.reshape(-1)[0])


def _text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


class _Object:
    __slots__ = ("id", "kind", "name", "sub", "node", "props")

    def __init__(self, node: FbxNode) -> None:
        p = node.props
        self.node = node
        self.kind = node.name.decode("latin-1")
        # 7.x: id, "Name\0\1Class", "Sub";  6.x: "Name\0\1Class", "Sub" (the name is the id)
        first = 0 if p and p[0][0] == "S" else 1
        self.id = p[0][1] if p and p[0][0] in "LIS" else None
        full = p[first][1] if len(p) > first and p[first][0] == "S" else b""
        self.name = _text(full.split(b"\x00\x01")[0]) if isinstance(full, bytes) else ""
        self.sub = _text(p[first + 1][1]) if len(p) > first + 1 and p[first + 1][0] == "S" \
            else ""
        self.props = _p70(node)

    def child(self, name: str) -> FbxNode | None:
        return self.node.find(name)

    def array(self, name: str) -> np.ndarray | None:
        c = self.node.find(name)
        if c is None or not c.props:
            return None
        return _values(c, self.path(name))

    def path(self, name: str) -> str:
        return f"Objects/{self.kind}::{self.name}/{name}"

    def number(self, name: str, default: float) -> float:
        """A numeric property (its first value), or ``default`` when absent."""
        v = self.props.get(name)
        if not v:
            return float(default)
        return _number(v, self.path(name))


class Properties(Mapping):
    """Property name -> values (a list), like a dict, with each row's values
    built when first read: a scene reads a few dozen of the thousands of
    Properties70 rows (object and template ones), and building every row's
    property list was the largest cost of reading a binary file's scene.

    An object's properties over its type's template (``base``) read as the
    merged dict ``{**template, **own}`` would, without copying the template
    into every object: a name missing from the object's rows is looked up in
    the template (whose rows are then built once for all its objects)."""

    __slots__ = ("_rows", "_base")

    def __init__(self, rows: dict | None = None, base: "Properties | None" = None) -> None:
        #: name -> values list, or (row node, values skipped) until read
        self._rows: dict = {} if rows is None else rows
        self._base = base

    def __getitem__(self, name: str) -> list:
        rows = self._rows
        if name not in rows and self._base is not None:
            return self._base[name]
        v = rows[name]
        if type(v) is tuple:
            node, skip = v
            v = rows[name] = [x for _, x in node.props[skip:]]
        return v

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def __contains__(self, name: object) -> bool:
        return name in self._rows or (self._base is not None and name in self._base)

    def __iter__(self):
        if self._base is None:
            return iter(self._rows)
        # the order of {**base, **own}: the template's names, then the object's new ones
        return iter([*self._base, *(k for k in self._rows if k not in self._base)])

    def __len__(self) -> int:
        if self._base is None:
            return len(self._rows)
        return len(self._base) + sum(k not in self._base for k in self._rows)

    def update(self, other: "Properties") -> None:
        """``other``'s rows over these (a later row of a name wins, as in a dict)."""
        if self._base is not None or other._base is not None:
            raise ValueError("update() merges plain row sets (templates), not chained ones")
        self._rows.update(other._rows)

    def under(self, own: "Properties") -> "Properties":
        """These rows (template defaults) with ``own``'s over them: reads as
        ``{**self, **own}``."""
        if own._base is not None:  # already over a template: merge by value
            return Properties({k: own[k] for k in own}, base=self)
        return Properties(own._rows, base=self)


def _p70(node: FbxNode) -> Properties:
    """Property name -> values, from Properties70/P (7.x) or Properties60/Property (6.x)."""
    rows: dict = {}
    for block, row, skip in ((b"Properties70", b"P", 4), (b"Properties60", b"Property", 3)):
        p70 = node.find(block)
        for p in (p70.children or []) if p70 is not None else []:
            if p.name != row:
                continue
            name = p.first_string()
            if name is not None:
                rows[name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)] = \
                    (p, skip)
    return Properties(rows)


def _vec(obj: _Object, name: str, default: tuple) -> np.ndarray:
    v = obj.props.get(name)
    if v is None or len(v) < 3:
        return np.array(default, dtype=np.float64)
    return _numbers(v[:3], obj.path(name)).astype(np.float64)


#: the pivot / offset / pre-post properties of a Model, in chain order
STATIC_FACTORS = ("RotationOffset", "RotationPivot", "PreRotation", "PostRotation",
                  "ScalingOffset", "ScalingPivot")
#: sample rows whose 4x4 matrices one batched chain builds at most (about 8 MB each)
MAX_BATCH_ROWS = 65536


def transform_inputs(obj: _Object, t=None, r=None, s=None, rq=None) -> tuple:
    """The values :func:`local_matrices` chains, read (and checked) in its
    order: ``(t, r, s, rq, rotation order, statics)``; a static is None when
    it is zero (the usual case: its factor is the identity and is left out of
    the chain, which changes no bit of the product)."""
    t = _vec(obj, "Lcl Translation", (0, 0, 0)) if t is None else t
    r = _vec(obj, "Lcl Rotation", (0, 0, 0)) if r is None else r
    s = _vec(obj, "Lcl Scaling", (1, 1, 1)) if s is None else s
    order = ROTATION_ORDERS[int(obj.number("RotationOrder", 0)) % 7]
    statics = []
    props = obj.props
    for name in STATIC_FACTORS:
        given = props.get(name)
        if given is None or len(given) < 3:  # absent: the zero default, left out
            statics.append(None)
            continue
        v = _vec(obj, name, (0, 0, 0))
        statics.append(v if v.any() else None)
    return t, r, s, rq, order, tuple(statics)


def _chain(t, r, s, rq, order: str, statics: tuple) -> np.ndarray:
    """``T·Roff·Rp·Rpre·R·Rpost^-1·Rp^-1·Soff·Sp·S·Sp^-1``, every input
    vectorised over the same leading axis (or broadcast against it)."""
    def tr(v):
        return trs_to_matrix(translation=np.asarray(v, dtype=np.float64))

    def rot(v, o="XYZ"):
        return trs_to_matrix(rotation=quat_from_euler(np.asarray(v, np.float64), o, degrees=True))

    inv = np.linalg.inv
    roff, rp, rpre, rpost, soff, sp = statics
    S = trs_to_matrix(scale=np.asarray(s, dtype=np.float64))
    R = rot(r, order) if rq is None else trs_to_matrix(rotation=np.asarray(rq, np.float64))
    m = tr(t)
    for factor in (None if roff is None else tr(roff), None if rp is None else tr(rp),
                   None if rpre is None else rot(rpre), R,
                   None if rpost is None else inv(rot(rpost)),
                   None if rp is None else inv(tr(rp)), None if soff is None else tr(soff),
                   None if sp is None else tr(sp), S, None if sp is None else inv(tr(sp))):
        if factor is not None:
            m = m @ factor
    return m


def local_matrices(obj: _Object, t=None, r=None, s=None, rq=None) -> np.ndarray:
    """``T·Roff·Rp·Rpre·R·Rpost^-1·Rp^-1·Soff·Sp·S·Sp^-1`` (vectorised over
    the leading axis of animated t/r/s; ``rq`` gives R as quaternions instead
    of Euler angles, for blended animation layers)."""
    return _chain(*transform_inputs(obj, t, r, s, rq))


def local_trs(obj: _Object, t=None, r=None, s=None, rq=None) -> tuple:
    """The FBX local transform as (t (T, 3), q (T, 4), s (T, 3)); pivots and
    pre/post rotations leave no shear, so this is exact."""
    m = local_matrices(obj, t, r, s, rq)
    return decompose_matrix(m if m.ndim == 3 else m[None])


def local_trs_many(items: list) -> list:
    """:func:`local_trs` of many ``(obj, t, r, s, rq)`` at once, the same
    numbers bit for bit: models whose chains have the same shape (rotation
    order, which statics are present, Euler or quaternion R) are stacked along
    the leading axis and built by one chain, so a scene with hundreds of
    models costs a few dozen numpy calls instead of hundreds per model.  The
    values are read model by model first, so a bad property raises the same
    error as :func:`local_trs` would, for the same model."""
    return local_trs_of_inputs([transform_inputs(*item) for item in items])


def local_trs_of_inputs(inputs: list) -> list:
    """:func:`local_trs_many` of values already read by :func:`transform_inputs`."""
    groups: dict = {}
    for i, (t, r, s, rq, order, statics) in enumerate(inputs):
        key = (order, rq is None, tuple(x is None for x in statics), np.ndim(t) == 2)
        groups.setdefault(key, []).append(i)
    out: list = [None] * len(inputs)
    for (_, euler, absent, sampled), members in groups.items():
        batch: list = []
        rows = 0
        for i in members:
            n = len(inputs[i][0]) if sampled else 1
            if batch and rows + n > MAX_BATCH_ROWS:
                _chain_batch(inputs, batch, sampled, euler, absent, out)
                batch, rows = [], 0
            batch.append((i, n))
            rows += n
        if batch:
            _chain_batch(inputs, batch, sampled, euler, absent, out)
    return out


def _chain_batch(inputs: list, batch: list, sampled: bool, euler: bool, absent: tuple,
                 out: list) -> None:
    """One stacked chain for ``batch`` ((input index, rows) pairs of one group)."""
    def stacked(k: int) -> np.ndarray:
        if sampled:
            return np.concatenate([np.asarray(inputs[i][k], dtype=np.float64) for i, _ in batch])
        return np.stack([np.asarray(inputs[i][k], dtype=np.float64) for i, _ in batch])

    def stacked_static(j: int) -> np.ndarray | None:
        if absent[j]:
            return None
        vs = [inputs[i][5][j] for i, _ in batch]
        if sampled:
            return np.concatenate([np.broadcast_to(v, (n, 3)) for v, (_, n) in zip(vs, batch)])
        return np.stack(vs)

    order = inputs[batch[0][0]][4]
    m = _chain(stacked(0), stacked(1) if euler else None, stacked(2),
               None if euler else stacked(3), order,
               tuple(stacked_static(j) for j in range(len(STATIC_FACTORS))))
    t, q, s = decompose_matrix(m)
    at = 0
    for i, n in batch:
        out[i] = (t[at:at + n], q[at:at + n], s[at:at + n])
        at += n


def _axis_matrix(gs: dict) -> np.ndarray:
    def axis(name, default_axis, default_sign):
        a = _number(gs.get(name) or [default_axis], f"GlobalSettings/{name}")
        sign = _number(gs.get(name + "Sign") or [default_sign], f"GlobalSettings/{name}Sign")
        if not np.isfinite(a):
            raise ValueFormatError(f"GlobalSettings {name} is not an axis number",
                                   path=f"GlobalSettings/{name}", found=a)
        e = np.zeros(3)
        e[int(a) % 3] = 1.0 if sign >= 0 else -1.0
        return e
    return np.stack([axis("CoordAxis", 0, 1), axis("UpAxis", 1, 1), axis("FrontAxis", 2, 1)])


def _values(node: FbxNode, path: str) -> np.ndarray:
    """A node's numbers: its array (7.x) or its scalar list (6.x style)."""
    if node.props and hasattr(node.props[0][1], "values"):
        return _numbers(node.props[0][1].values, path)
    return _numbers([v for _, v in node.props], path)


def _text_child(node: FbxNode, name: bytes) -> str:
    c = node.find(name)
    if c is None or not c.props:
        return ""
    return _text(c.props[0][1])
