"""Plain value trees for the hand-walked Darkstar world formats (chunked
bitmaps, palettes, volumes), and their two lossless JSON forms.

A tree is dicts, lists, ints, ``str`` (chunk tags and names, latin-1 so every
byte survives), ``bytes`` (raw parts) and numpy arrays (bulk data).  In JSON:
bytes are ``{"hex": ...}`` and an array is ``{"dtype", "shape", "values"}``,
its values converted by the layout engine's own numeric rules (floats as bit
patterns in the wire form, decimals in the readable form), so the two forms
mean the same here as in every other family.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.errors import EncodeError, JsonFormatError
from ...core.layout import JsonCtx, _np_from_json, _np_to_json, hex_to_bytes

#: dtypes a tree array may have (anything else in JSON is refused)
ARRAY_DTYPES = {"|u1", "|i1", "<u2", "<i2", "<u4", "<i4", "<f4"}
#: deepest tree accepted from JSON
MAX_DEPTH = 64


def to_json(v: Any, ctx: JsonCtx) -> Any:
    if isinstance(v, dict):
        return {k: to_json(x, ctx) for k, x in v.items()}
    if isinstance(v, list):
        return [to_json(x, ctx) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return {"hex": bytes(v).hex()}
    if isinstance(v, np.ndarray):
        return {"dtype": v.dtype.str, "shape": list(v.shape),
                "values": _np_to_json(np.ascontiguousarray(v).reshape(-1), ctx)}
    return v


def from_json(o: Any, ctx: JsonCtx, jpath: str = "$.root", depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise JsonFormatError("document nested too deeply", path=jpath)
    if isinstance(o, dict):
        keys = set(o)
        if keys == {"hex"}:
            return hex_to_bytes(o["hex"], jpath + ".hex")
        if keys == {"dtype", "shape", "values"}:
            return _array_from_json(o, ctx, jpath)
        return {k: from_json(x, ctx, f"{jpath}.{k}", depth + 1) for k, x in o.items()}
    if isinstance(o, list):
        return [from_json(x, ctx, f"{jpath}[{i}]", depth + 1) for i, x in enumerate(o)]
    if isinstance(o, bool) or o is None or isinstance(o, float):
        raise JsonFormatError(f"unexpected {type(o).__name__} value", path=jpath)
    return o


def _array_from_json(o: dict, ctx: JsonCtx, jpath: str) -> np.ndarray:
    dt = o["dtype"]
    if not isinstance(dt, str) or dt not in ARRAY_DTYPES:
        raise JsonFormatError(f"array dtype {dt!r} not one of {sorted(ARRAY_DTYPES)}",
                              path=jpath + ".dtype")
    shape = o["shape"]
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool)
                                              and n >= 0 for n in shape) or len(shape) > 4:
        raise JsonFormatError("shape must be a list of up to 4 non-negative integers",
                              path=jpath + ".shape")
    flat = _np_from_json(o["values"], np.dtype(dt), (), ctx, jpath + ".values")
    if flat.ndim != 1 or flat.size != int(np.prod(shape, dtype=np.int64)):
        raise JsonFormatError(f"{flat.size} values for shape {shape}", path=jpath + ".values")
    return flat.reshape(shape)


# ----------------------------------------------------------------------------
# checks used by the encoders (a hand-edited tree is refused, never crashes)


def need_int(v: Any, path: str, lo: int = 0, hi: int = 0xFFFFFFFF) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= int(v) <= hi:
        raise EncodeError(f"expected an integer in {lo}..{hi}, found {v!r}", path=path)
    return int(v)


def need_bytes(v: Any, path: str, size: int | None = None) -> bytes:
    if not isinstance(v, (bytes, bytearray)):
        raise EncodeError(f"expected raw bytes, found {type(v).__name__}", path=path)
    if size is not None and len(v) != size:
        raise EncodeError(f"expected {size} bytes, found {len(v)}", path=path)
    return bytes(v)


def need_tag(v: Any, path: str) -> bytes:
    if not isinstance(v, str):
        raise EncodeError(f"a chunk tag is a 4-character string, found {v!r}", path=path)
    try:
        raw = v.encode("latin-1")
    except UnicodeEncodeError:
        raise EncodeError(f"tag {v!r} is not latin-1", path=path) from None
    if len(raw) != 4:
        raise EncodeError(f"a chunk tag is 4 characters, found {v!r}", path=path)
    return raw


def need_array(v: Any, dtype: str, path: str, shape: tuple | None = None) -> np.ndarray:
    if not isinstance(v, np.ndarray):
        raise EncodeError(f"expected a numpy array, found {type(v).__name__}", path=path)
    if v.dtype.kind not in "iuf" or (v.dtype.kind == "f") != (dtype[1] == "f"):
        raise EncodeError(f"expected {dtype} values, found {v.dtype}", path=path)
    if v.dtype.str != dtype:
        if v.dtype.kind in "iu":
            info = np.iinfo(np.dtype(dtype))
            if v.size and (v.min() < info.min or v.max() > info.max):
                raise EncodeError(f"values out of range for {dtype}", path=path)
        v = v.astype(dtype)
    if shape is not None and v.shape != shape:
        raise EncodeError(f"expected shape {shape}, found {v.shape}", path=path)
    return v


def need_dict(v: Any, path: str, keys: tuple[str, ...] = ()) -> dict:
    if not isinstance(v, dict):
        raise EncodeError(f"expected an object, found {type(v).__name__}", path=path)
    missing = [k for k in keys if k not in v]
    if missing:
        raise EncodeError(f"missing {missing}", path=path)
    return v


def need_list(v: Any, path: str) -> list:
    if not isinstance(v, list):
        raise EncodeError(f"expected a list, found {type(v).__name__}", path=path)
    return v
