"""The check every importer runs first: no NaN or infinite number where it reads one.

glTF forbids non-finite accessor values (the Khronos validator reports them as
errors) but a tool that does not check can write them, and a scene built in
Python or exported from a damaged game file can hold them.  An importer would
turn them into a file of NaN vertices, a failed matrix inversion or integers
out of range; refusing up front names the culprit instead."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core.errors import ValueFormatError
from .model import Scene

__all__ = ["NonFiniteError", "require_finite"]


class NonFiniteError(ValueFormatError):
    """The scene holds a NaN or an infinite number where an importer reads it."""


def _first_bad(values: Any) -> tuple[int, float] | None:
    """(index of the first row holding a NaN/inf, that value), or None."""
    if values is None:
        return None
    a = np.asarray(values)
    if a.dtype.kind not in "fc" or a.size == 0:
        return None
    rows = a.reshape(len(a) if a.ndim else 1, -1)
    bad = ~np.isfinite(rows)
    if not bad.any():
        return None
    row = int(np.flatnonzero(bad.any(axis=1))[0])
    return row, float(rows[row][bad[row]][0].real)


def _refuse(what: str, path: str, row_name: str | None, hit: tuple[int, float]) -> NonFiniteError:
    row, value = hit
    of = f" of {row_name} {row}" if row_name else ""
    return NonFiniteError(f"{what}{of} is non-finite ({value}): NaN and infinite numbers "
                          "cannot be imported (fix or remove them in the modelling tool)", path=path)


def _named(kind: str, index: int, name: str) -> str:
    return f"{kind} {name!r}" if name else f"{kind} {index}"


def require_finite(scene: Scene) -> None:
    """Raise :class:`NonFiniteError` naming the first NaN/inf in what importers
    read: node transforms, the vertex data and morph targets of meshes that
    nodes draw, skins' inverse bind matrices, and animation keys."""
    for i, n in enumerate(scene.nodes):
        for field in ("translation", "rotation", "scale", "matrix"):
            value = getattr(n, field)
            hit = _first_bad(None if value is None else np.reshape(value, (1, -1)))
            if hit is not None:
                raise _refuse(f"{_named('node', i, n.name)}: {field}",
                              f"nodes[{i}].{field}", None, hit)
    drawn = sorted({n.mesh for n in scene.nodes if n.mesh is not None
                    and 0 <= n.mesh < len(scene.meshes)})
    for mi in drawn:
        m = scene.meshes[mi]
        hit = _first_bad(None if m.weights is None else np.reshape(m.weights, (-1, 1)))
        if hit is not None:
            raise _refuse(f"{_named('mesh', mi, m.name)}: morph weight",
                          f"meshes[{mi}].weights", "target", hit)
        for pi, p in enumerate(m.primitives):
            where = f"meshes[{mi}].primitives[{pi}]"
            what = f"{_named('mesh', mi, m.name)} primitive {pi}"
            arrays = [("positions", "POSITION", p.positions), ("normals", "NORMAL", p.normals),
                      ("colors", "COLOR_0", p.colors), ("weights", "WEIGHTS_0", p.weights)]
            arrays += [(f"uvs[{k}]", f"TEXCOORD_{k}", uv) for k, uv in enumerate(p.uvs)]
            for ti, t in enumerate(p.targets):
                arrays += [(f"targets[{ti}].positions", f"morph target {ti} POSITION",
                            t.positions),
                           (f"targets[{ti}].normals", f"morph target {ti} NORMAL", t.normals)]
            for field, label, values in arrays:
                hit = _first_bad(values)
                if hit is not None:
                    raise _refuse(f"{what}: {label}", f"{where}.{field}", "vertex", hit)
    for si, sk in enumerate(scene.skins):
        hit = _first_bad(sk.inverse_bind_matrices)
        if hit is not None:
            raise _refuse(f"{_named('skin', si, sk.name)}: inverse bind matrix",
                          f"skins[{si}].inverse_bind_matrices", "joint", hit)
    for ai, a in enumerate(scene.animations):
        for ci, c in enumerate(a.channels):
            for field in ("times", "values"):
                hit = _first_bad(getattr(c, field))
                if hit is not None:
                    raise _refuse(f"{_named('animation', ai, a.name)} channel {ci} "
                                  f"({c.path}): key {field[:-1]}",
                                  f"animations[{ai}].channels[{ci}].{field}", "key", hit)
