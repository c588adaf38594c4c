"""Lossless JSON for the FBX node tree (forms ``wire`` and ``readable``).

Node: ``{"name", "props", "children"?: [...], "zero_end"?, "fmt"?}``: a node
without ``children`` (or with ``"children": null``, as earlier versions wrote)
has no nested list, ``[]`` an empty one (different bytes).
Property: ``[code, value]``.  Wire form keeps floats as hex bit patterns,
strings as hex and array elements as base64 of the stored bytes; readable
form uses numbers and text, falling back to bits/hex where a value has no
faithful readable spelling (NaN, invalid UTF-8).  Compressed arrays carry
``zlib_level`` when recompression reproduces their payload (checked here),
else the original ``payload``.
"""
from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

from ...core.errors import FormatError, JsonFormatError
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.values import f32_from_bits, f32_to_bits, f64_from_bits, f64_to_bits
from .ascii import AsciiArray
from .model import ARRAY_DTYPES, FbxArray, FbxNode, array_dtype

_INT_CODES = set("YILBZ")


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _unb64(s: Any, jpath: str) -> bytes:
    try:
        return base64.b64decode(s, validate=True)
    except (TypeError, ValueError):
        raise JsonFormatError("expected base64 text", path=jpath) from None


def _unhex(s: Any, jpath: str) -> bytes:
    try:
        return bytes.fromhex(s)
    except (TypeError, ValueError):
        raise JsonFormatError("expected hex text", path=jpath) from None


# ----------------------------------------------------------------------------
# to JSON

def tree_to_json(root: FbxNode, form: str) -> dict:
    readable = form == "readable"
    out: dict = {"nodes": [node_to_json(c, readable) for c in root.children or ()]}
    if root.fmt is not None:
        out["fmt"] = root.fmt
    return out


def node_to_json(node: FbxNode, readable: bool) -> dict:
    d: dict = {"name": node.name.decode("latin-1"),
               "props": [prop_to_json(c, v, readable) for c, v in node.props]}
    if node.children is not None:  # (a leaf has none; `"children": null` loads the same)
        d["children"] = [node_to_json(c, readable) for c in node.children]
    if node.zero_end:
        d["zero_end"] = True
    if node.fmt is not None:
        d["fmt"] = node.fmt
    return d


def prop_to_json(code: str, v: Any, readable: bool) -> list:
    if code in _INT_CODES:
        return [code, int(v)]
    if code == "C":
        return [code, chr(v) if readable and 0x21 <= v < 0x7F else int(v)]
    if code == "F" or code == "D":
        if readable and math.isfinite(v):
            return [code, float(v)]
        bits = f32_to_bits(v) if code == "F" else f64_to_bits(v)
        return [code, {"bits": f"{bits:0{8 if code == 'F' else 16}x}"}] if readable else \
            [code, f"{bits:0{8 if code == 'F' else 16}x}"]
    if code == "S":
        if readable:
            try:
                return [code, v.decode("utf-8")]
            except UnicodeDecodeError:
                return [code, {"hex": v.hex()}]
        return [code, v.hex()]
    if code == "R":
        return [code, {"base64": _b64(v)}] if readable else [code, v.hex()]
    if code in ARRAY_DTYPES:
        return [code, _array_to_json(v, readable)]
    if code in ("s", "n", "w"):
        return [code, v]
    if code == "*":
        d = {"count": v.count, "text": v.text}
        if readable or v.text is None:
            try:
                d["values"] = v.values.tolist()
            except FormatError:  # a lexeme that is no number: the text says it all
                pass
        return [code, d]
    raise JsonFormatError(f"cannot express property type {code!r}")


def _array_to_json(a: FbxArray, readable: bool) -> dict:
    d: dict = {"count": a.count, "encoding": a.encoding}
    try:
        vals = a.values
    except FormatError as e:
        # a stream that does not inflate to its count: kept as stored bytes
        d["payload"] = _b64(a.payload or b"")
        d["invalid"] = e.message
        return d
    if a.encoding == 1:
        if a.payload is not None and not a.unchanged():
            d["zlib_level"] = a.zlib_level or 1
        elif a.payload is not None and a.reproducible():
            d["zlib_level"] = a.zlib_level
        elif a.payload is not None:
            d["payload"] = _b64(a.payload)
        else:
            d["zlib_level"] = a.level or 1
    if readable and (a.code not in "fd" or bool(np.isfinite(vals).all())):
        d["values"] = vals.tolist()
    else:
        d["data"] = _b64(np.ascontiguousarray(vals, dtype=a.dtype).tobytes())
    return d


# ----------------------------------------------------------------------------
# from JSON

def tree_from_json(obj: Any, big_endian: bool, limits: Limits = DEFAULT_LIMITS,
                   form: str = "wire") -> FbxNode:
    if not isinstance(obj, dict) or not isinstance(obj.get("nodes"), list):
        raise JsonFormatError("root must be an object with a nodes list", path="$.root")
    root = FbxNode(b"", [], [])
    root.fmt = _fmt(obj.get("fmt"), "$.root.fmt")
    # iterative to bound the nesting by limits.max_depth
    stack = [(root, obj["nodes"], "$.root.nodes", 0)]
    while stack:
        parent, items, jpath, depth = stack.pop()
        if depth > limits.max_depth:
            raise JsonFormatError(f"nodes nested deeper than {limits.max_depth}", path=jpath)
        for i, item in enumerate(items):
            p = f"{jpath}[{i}]"
            node = _node_from_json(item, big_endian, limits, p, form == "readable")
            parent.children.append(node)  # type: ignore[union-attr]
            kids = item.get("children")  # validated by _node_from_json
            if kids is not None:
                node.children = []
                stack.append((node, kids, p + ".children", depth + 1))
    return root


def _fmt(v: Any, jpath: str) -> list | None:
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise JsonFormatError("fmt must be a list of strings", path=jpath)
    return list(v)


def _node_from_json(item: Any, big_endian: bool, limits: Limits, jpath: str,
                    readable: bool) -> FbxNode:
    if not isinstance(item, dict):
        raise JsonFormatError("a node is an object", path=jpath)
    name = item.get("name")
    if not isinstance(name, str):
        raise JsonFormatError("node name must be a string", path=jpath + ".name")
    try:
        bname = name.encode("latin-1")
    except UnicodeEncodeError:
        raise JsonFormatError("node name must be latin-1 text", path=jpath + ".name") from None
    props = item.get("props")
    kids = item.get("children", None)
    if not isinstance(props, list):
        raise JsonFormatError("props must be a list", path=jpath + ".props")
    if kids is not None and not isinstance(kids, list):
        raise JsonFormatError("children must be null or a list", path=jpath + ".children")
    node = FbxNode(bname, [prop_from_json(p, big_endian, limits, f"{jpath}.props[{i}]", readable)
                           for i, p in enumerate(props)])
    node.zero_end = bool(item.get("zero_end", False))
    node.fmt = _fmt(item.get("fmt"), jpath + ".fmt")
    return node


def prop_from_json(p: Any, big_endian: bool, limits: Limits, jpath: str,
                   readable: bool) -> tuple:
    if not isinstance(p, list) or len(p) != 2 or not isinstance(p[0], str):
        raise JsonFormatError("a property is [code, value]", path=jpath)
    code, v = p
    try:
        if code in _INT_CODES or code == "C":
            if code == "C" and isinstance(v, str) and len(v) == 1:
                v = ord(v)
            if not isinstance(v, int) or isinstance(v, bool):
                raise JsonFormatError(f"{code} value must be an integer", path=jpath)
            lo, hi = {"Y": (-1 << 15, 1 << 15), "I": (-1 << 31, 1 << 31),
                      "L": (-1 << 63, 1 << 63)}.get(code, (0, 256))
            if not lo <= v < hi:
                raise JsonFormatError(f"{code} value {v} out of range", path=jpath)
            return (code, v)
        if code in ("F", "D"):
            if isinstance(v, dict):
                v = v.get("bits")
            if isinstance(v, str):
                bits = int(v, 16)
                return (code, f32_from_bits(bits) if code == "F" else f64_from_bits(bits))
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return (code, float(v))
            raise JsonFormatError(f"{code} value must be a number or bits", path=jpath)
        if code == "S":
            if isinstance(v, dict):
                return (code, _unhex(v.get("hex"), jpath))
            if not isinstance(v, str):
                raise JsonFormatError("S value must be text", path=jpath)
            return (code, v.encode("utf-8")) if readable else (code, _unhex(v, jpath))
        if code == "R":
            if isinstance(v, dict):
                return (code, _unb64(v.get("base64"), jpath))
            return (code, _unhex(v, jpath))
        if code in ARRAY_DTYPES:
            return (code, _array_from_json(code, v, big_endian, limits, jpath))
        if code in ("s", "n", "w"):
            if not isinstance(v, str):
                raise JsonFormatError(f"{code} value must be text", path=jpath)
            return (code, v)
        if code == "*":
            return (code, _ascii_array_from_json(v, jpath))
    except (ValueError, OverflowError, TypeError) as e:
        raise JsonFormatError(f"bad {code} value: {e}", path=jpath) from None
    raise JsonFormatError(f"unknown property code {code!r}", path=jpath)


def _array_from_json(code: str, v: Any, big_endian: bool, limits: Limits,
                     jpath: str) -> FbxArray:
    if not isinstance(v, dict):
        raise JsonFormatError("an array is an object", path=jpath)
    enc = v.get("encoding", 0)
    if enc not in (0, 1):
        raise JsonFormatError(f"unknown array encoding {enc!r}", path=jpath + ".encoding")
    dt = array_dtype(code, big_endian)
    count = v.get("count")
    if "payload" in v and "data" not in v and "values" not in v:
        # stored bytes only (a stream that did not inflate): written back as is
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count < 1 << 32:
            raise JsonFormatError("array count must be an integer", path=jpath + ".count")
        return FbxArray(code, count=count, encoding=enc, payload=_unb64(v["payload"], jpath),
                        big_endian=big_endian, limits=limits)
    if "data" in v:
        raw = _unb64(v["data"], jpath + ".data")
        if len(raw) % dt.itemsize:
            raise JsonFormatError("array data is not a whole number of elements",
                                  path=jpath + ".data")
        vals = np.frombuffer(raw, dt).copy()
    elif isinstance(v.get("values"), list):
        if len(v["values"]) > limits.max_elements:
            raise JsonFormatError("array exceeds max_elements", path=jpath + ".values")
        vals = _values_from_json(v["values"], dt, jpath + ".values")
    elif enc == 1 and "payload" in v:
        # only the stored payload (it does not inflate to its count): kept as is
        count = v.get("count")
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count < 1 << 32:
            raise JsonFormatError("count must be an integer 0..2^32-1", path=jpath + ".count")
        return FbxArray(code, count=count, encoding=1, payload=_unb64(v["payload"], jpath + ".payload"),
                        big_endian=big_endian, limits=limits)
    else:
        raise JsonFormatError("array needs values or data", path=jpath)
    payload = v.get("payload")
    if enc == 1 and payload is not None:
        arr = FbxArray(code, count=len(vals), encoding=1,
                       payload=_unb64(payload, jpath + ".payload"), big_endian=big_endian,
                       limits=limits)
        try:
            same = arr.raw_bytes() == vals.tobytes()
        except Exception:  # noqa: BLE001 - a bad payload is replaced below
            same = False
        if same:
            return arr
        arr = FbxArray(code, vals, encoding=1, big_endian=big_endian, limits=limits,
                       level=arr.zlib_level)
        return arr
    level = v.get("zlib_level")
    if level is not None and (not isinstance(level, int) or not 0 <= level <= 9):
        raise JsonFormatError("zlib_level must be 0-9", path=jpath + ".zlib_level")
    return FbxArray(code, vals, encoding=enc, big_endian=big_endian, limits=limits,
                    level=level)


def _values_from_json(values: list, dt: np.dtype, jpath: str) -> np.ndarray:
    """Readable array values in ``dt``; a finite number beyond the range of a
    float type is refused (casting would silently make it inf), as the layout
    engine's ``_np_from_json`` does."""
    if dt.kind != "f":
        return np.array(values, dtype=dt)
    src = np.array(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        vals = src.astype(dt)
    if vals.size and bool((np.isinf(vals) & np.isfinite(src)).any()):
        bad = int(np.flatnonzero(np.isinf(vals) & np.isfinite(src))[0])
        raise JsonFormatError(f"value {float(src[bad])!r} out of range for {dt}",
                              path=f"{jpath}[{bad}]", found=float(src[bad]))
    return vals


def _ascii_array_from_json(v: Any, jpath: str) -> AsciiArray:
    if not isinstance(v, dict):
        raise JsonFormatError("an ASCII array is an object", path=jpath)
    count, text = v.get("count"), v.get("text")
    if count is not None and not isinstance(count, str) or text is not None and \
            not isinstance(text, str):
        raise JsonFormatError("count and text must be strings", path=jpath)
    arr = AsciiArray(count, text)
    if isinstance(v.get("values"), list):
        new = np.array(v["values"])
        if text is None or not np.array_equal(arr.values, new):
            arr = AsciiArray(None, None, new)
    elif text is None:
        raise JsonFormatError("ASCII array needs text or values", path=jpath)
    return arr
