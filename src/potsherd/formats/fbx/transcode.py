"""Transcoding FBX between binary and ASCII, and between 7.x versions (same node
model); the entry point that also upgrades older files through the scene is
:mod:`.upgrade`.

binary -> ASCII: type codes are dropped (numbers spelled so that they read
back to the same value: shortest round-trip float spelling, float32 arrays
with float32 precision), ``Name\\x00\\x01Class`` becomes ``Class::Name``,
``R`` blobs become base64 strings, ``KeyAttrDataFloat`` becomes int32 bit
patterns.  Binary-only top-level nodes (FileId, CreationTime, Creator) are
kept so that the way back restores them.
ASCII -> binary: codes come from the signature table (``tables.py``), the
FileId/CreationTime/Creator nodes are created when missing (ids derived from
CreationTime as the SDK does), arrays are compressed SDK style (raw size
>= 1024 bytes) or Blender style (> 128 bytes), level 1.
"""
from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

import numpy as np

from ...core.errors import EncodeError, FormatError
from ...document import Document
from .ascii import AsciiArray, escape, format_numbers, unescape
from .model import ARRAY_CODES, FbxArray, FbxNode, array_dtype, file_id
from .tables import expand, load_table

#: raw array size at or above which a style compresses (SDK: >= 1024, Blender: > 128)
COMPRESS_MIN = {"sdk": 1024, "blender": 129, "none": None}
_FLOAT_BITS_PATHS = (b"KeyAttrDataFloat",)
_INT_LEX = re.compile(r"[-+]?\d+\Z")
_BARE_NAME = re.compile(rb"[A-Za-z0-9_\-()|.+]+\Z")


def _cli_params(items: Any) -> dict:
    out = {}
    for item in items or []:
        if isinstance(item, str) and "=" in item:
            k, v = item.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def to_binary(doc: Document, version: int | None = None,
              compression: str | None = None) -> Document:
    """A binary document from an ASCII or binary one.

    ``compression`` (sdk, blender, none) picks which arrays are deflated; for
    a binary source None keeps every array as stored (payloads included).
    """
    if doc.format == "fbx":
        root = _copy_tree(doc.root)
        if compression is not None:
            restyle_arrays(root, compression)
        params = dict(doc.params)
        trailing = bytes(doc.trailing)
        if version is not None and int(version) != params.get("version"):
            params["version"] = int(version)
            _set_fbx_version(root, int(version), binary=True)
            if params.get("footer") == "raw":
                params["footer"] = "sdk"
                trailing = b""
        return Document("fbx", root, params, trailing, [])
    src_version = int(doc.params.get("version") or 7400)
    version = int(version) if version is not None else \
        (3000 if src_version < 6000 else src_version)
    root = ascii_tree_to_binary(doc.root, compression or "sdk")
    if version != src_version and version >= 7000:
        _set_fbx_version(root, version, binary=True)
    _ensure_binary_header_nodes(root)
    params = {"version": version, "endian_byte": 0, "byte21": 0x1A, "terminated": True,
              "footer": "sdk", "file_id": "derived"}
    return Document("fbx", root, params, b"", [])


def to_ascii(doc: Document, version: int | None = None) -> Document:
    """An ASCII document (canonical layout) from a binary or ASCII one."""
    if doc.format == "fbx-ascii":
        root = _copy_tree(doc.root)
        _strip_fmt(root)
        v = int(version or doc.params.get("version") or 7400)
        if version is not None:
            _set_fbx_version(root, v, binary=False)
        return Document("fbx-ascii", root, {"version": v, "newline": "\n", "indent": "\t"},
                        b"", [])
    v = int(version) if version is not None else _real_version(doc)
    root = binary_tree_to_ascii(doc.root)
    if version is not None:
        _set_fbx_version(root, v, binary=False)
    return Document("fbx-ascii", root, {"version": v, "newline": "\n", "indent": "\t"}, b"", [])


def _real_version(doc: Document) -> int:
    """Header 3000 files carry the real version in FBXHeaderExtension/FBXVersion."""
    hdr = doc.root.find(b"FBXHeaderExtension")
    node = hdr.find(b"FBXVersion") if hdr else None
    if node is not None and node.props and node.props[0][0] == "I":
        return int(node.props[0][1])
    return int(doc.params.get("version") or 7400)


# ----------------------------------------------------------------------------
# binary -> ASCII

def binary_tree_to_ascii(root: FbxNode) -> FbxNode:
    out = FbxNode(b"", [], [])
    stack = [(root, out)]
    while stack:
        src, dst = stack.pop()
        for c in src.children or ():
            name = c.name if _BARE_NAME.match(c.name) else b'"' + c.name + b'"'
            n = FbxNode(name, [_prop_to_ascii(c.name, code, v) for code, v in c.props],
                        None if c.children is None else [])
            dst.children.append(n)  # type: ignore[union-attr]
            if c.children:
                stack.append((c, n))
    return out


def _prop_to_ascii(name: bytes, code: str, v: Any) -> tuple:
    if code == "S":
        if b"\x00\x01" in v:
            obj, _, cls = v.partition(b"\x00\x01")
            v = cls + b"::" + obj
        return ("s", escape(v))
    if code == "R":
        return ("s", base64.b64encode(v).decode("ascii"))
    if code in "CB":
        ch = chr(v)
        return ("w", ch) if ch.isalpha() else ("n", str(v))
    if code in "YIZL":
        return ("n", str(v))
    if code == "F":
        return ("n", _float_lexeme(v, True))
    if code == "D":
        return ("n", _float_lexeme(v, False))
    if code in ARRAY_CODES:
        vals = v.values
        if code == "f" and name in _FLOAT_BITS_PATHS:
            vals = np.ascontiguousarray(vals, dtype="<f4").view("<i4")
        arr = AsciiArray(None, None, vals.astype(vals.dtype.newbyteorder("=")))
        arr._lexemes = format_numbers(vals)
        return ("*", arr)
    raise EncodeError(f"cannot write property type {code!r} as ASCII")


def _float_lexeme(v: float, single: bool) -> str:
    if not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    if v == 0:
        return "-0" if math.copysign(1, v) < 0 else "0"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return str(np.float32(v)) if single else repr(float(v))


# ----------------------------------------------------------------------------
# ASCII -> binary

def ascii_tree_to_binary(root: FbxNode, compression: str = "sdk") -> FbxNode:
    table = load_table()
    min_size = COMPRESS_MIN[compression]
    out = FbxNode(b"", [], [])
    stack: list[tuple[FbxNode, FbxNode, str, bytes]] = [(root, out, "", b"")]
    while stack:
        src, dst, path, parent_name = stack.pop()
        for c in src.children or ():
            name = c.name
            if name.startswith(b'"') and name.endswith(b'"') and len(name) >= 2:
                name = name[1:-1]
            p = path + "/" + name.decode("latin-1")
            try:
                props = _type_props(p, name, c.props, table, min_size)
            except FormatError as e:
                raise e.prepend(p)
            n = FbxNode(name, props, None if c.children is None else [])
            dst.children.append(n)  # type: ignore[union-attr]
            if c.children:
                stack.append((c, n, p, name))
    return out


def _type_props(path: str, name: bytes, props: list, table: dict, min_size) -> list:
    sig = _signature(path, name, props, table)
    out = []
    for (kind, v), code in zip(props, sig):
        out.append(_value(code, kind, v, name, swap=True, min_size=min_size))
    return out


def _compatible(code: str, kind: str, v: Any) -> bool:
    if kind == "*":
        return code in ARRAY_CODES
    if kind == "s":
        return code in "SR"
    if kind == "w":
        return code in "CB" and len(v) == 1
    if code in "YIZLCB":
        return bool(_INT_LEX.match(v))
    return code in "FD"


def _signature(path: str, name: bytes, props: list, table: dict) -> str:
    n = len(props)
    kinds = props
    cands: list[str] = []
    if name in (b"P", b"Property") and n >= 2 and props[1][0] == "s":
        skip = 4 if name == b"P" else 3
        dtypes = table["p_types"].get(name.decode(), {}).get(props[1][1], [])
        cands = ["S" * skip + s for s in dtypes]
    cands += table["nodes"].get(path, [])
    for sig in cands:
        s = expand(sig, n)
        if s is not None and all(_compatible(c, k, v) for c, (k, v) in zip(s, kinds)):
            return s
    return "".join(_infer(k, v) for k, v in props)


def _infer(kind: str, v: Any) -> str:
    if kind == "s":
        return "S"
    if kind == "w":
        return "C" if len(v) == 1 else "S"
    if kind == "*":
        vals = v.values
        if vals.dtype.kind == "f":
            return "d"
        return "i" if (vals.size == 0 or (vals.min() >= -2**31 and vals.max() < 2**31)) else "l"
    if _INT_LEX.match(v):
        return "I" if -2**31 <= int(v) < 2**31 else "L"
    return "D"


def _parse_float(lex: str) -> float:
    low = lex.lower()
    if "#" in low:  # Windows spellings: 1.#INF, -1.#IND, 1.#QNAN
        if "inf" in low:
            return -math.inf if low.startswith("-") else math.inf
        return math.nan
    return float(lex)


def _value(code: str, kind: str, v: Any, name: bytes, swap: bool, min_size) -> tuple:
    try:
        if code == "S":
            if kind == "w":
                return ("S", v.encode("latin-1"))
            raw = unescape(v)
            if swap and b"::" in raw:
                cls, _, obj = raw.partition(b"::")
                raw = obj + b"\x00\x01" + cls
            return ("S", raw)
        if code == "R":
            try:
                return ("R", base64.b64decode(v, validate=True))
            except (binascii.Error, ValueError):
                return ("S", unescape(v))
        if code in "CB":
            return (code, ord(v) if kind == "w" else int(v) & 0xFF)
        if code in "YIZL":
            return (code, int(v))
        if code in "FD":
            return (code, _parse_float(v))
        if code in ARRAY_CODES:
            vals = v.values
            if code == "f" and name in _FLOAT_BITS_PATHS and vals.dtype.kind in "iu":
                vals = vals.astype("<i4").view("<f4")
            elif code in "fd" and vals.dtype.kind != "f":
                vals = np.array(v.lexemes(), dtype=np.float64)  # keeps "-0" as -0.0
            vals = np.ascontiguousarray(vals, dtype=array_dtype(code))
            enc = 1 if (min_size is not None and vals.nbytes >= min_size) else 0
            return (code, FbxArray(code, vals, encoding=enc, level=1))
    except (ValueError, OverflowError) as e:
        raise FormatError(f"value {str(v)[:40]!r} does not fit type {code}: {e}") from None
    raise FormatError(f"unknown type code {code!r}")


def restyle_arrays(root: FbxNode, style: str) -> None:
    """Deflate (level 1) exactly the arrays the SDK or Blender would, inflate the others."""
    min_size = COMPRESS_MIN[style]
    for _, node in root.walk():
        for i, (code, v) in enumerate(node.props):
            if not isinstance(v, FbxArray):
                continue
            want = 1 if (min_size is not None and v.count * v.dtype.itemsize >= min_size) else 0
            if want != v.encoding:
                arr = FbxArray(code, v.values, encoding=want, big_endian=v.big_endian, level=1)
                node.props[i] = (code, arr)


def _ensure_binary_header_nodes(root: FbxNode) -> None:
    """Create FileId, CreationTime and Creator (binary-only) after the header."""
    kids = root.children
    assert kids is not None
    hdr = root.find(b"FBXHeaderExtension")
    fresh = root.find(b"CreationTime") is None and root.find(b"FileId") is None
    if root.find(b"CreationTime") is None:
        kids.insert(_after_header(kids), FbxNode(b"CreationTime", [("S", _stamp(hdr))]))
    ct = root.find(b"CreationTime").props[0][1]  # type: ignore[union-attr]
    if root.find(b"FileId") is None:
        kids.insert(_after_header(kids), FbxNode(b"FileId", [("R", file_id(ct))]))
    if fresh and root.find(b"Creator") is None:
        creator = hdr.find(b"Creator") if hdr else None
        value = creator.props[0][1] if creator and creator.props and \
            creator.props[0][0] == "S" else b"potsherd"
        pos = kids.index(root.find(b"CreationTime")) + 1  # type: ignore[arg-type]
        kids.insert(pos, FbxNode(b"Creator", [("S", value)]))


def _after_header(kids: list) -> int:
    for i, k in enumerate(kids):
        if k.name == b"FBXHeaderExtension":
            return i + 1
    return 0


def _stamp(hdr: FbxNode | None) -> bytes:
    """CreationTime text from FBXHeaderExtension/CreationTimeStamp."""
    ts = hdr.find(b"CreationTimeStamp") if hdr else None
    vals = {}
    for key in ("Year", "Month", "Day", "Hour", "Minute", "Second", "Millisecond"):
        node = ts.find(key) if ts else None
        vals[key] = int(node.props[0][1]) if node and node.props and \
            node.props[0][0] in "IL" else 0
    if not ts:
        return b"1970-01-01 10:00:00:000"
    return ("{Year:04d}-{Month:02d}-{Day:02d} {Hour:02d}:{Minute:02d}:{Second:02d}:"
            "{Millisecond:03d}".format(**vals)).encode()


def _set_fbx_version(root: FbxNode, version: int, binary: bool) -> None:
    hdr = root.find(b"FBXHeaderExtension")
    node = hdr.find(b"FBXVersion") if hdr else None
    if node is not None:
        node.props = [("I", version)] if binary else [("n", str(version))]


# ----------------------------------------------------------------------------
# helpers

def _copy_tree(root: FbxNode) -> FbxNode:
    out = FbxNode(root.name, list(root.props), None if root.children is None else [])
    out.fmt = list(root.fmt) if root.fmt is not None else None
    stack = [(root, out)]
    while stack:
        src, dst = stack.pop()
        for c in src.children or ():
            n = FbxNode(c.name, list(c.props), None if c.children is None else [], c.zero_end)
            n.fmt = list(c.fmt) if c.fmt is not None else None
            dst.children.append(n)  # type: ignore[union-attr]
            if c.children:
                stack.append((c, n))
    return out


def _strip_fmt(root: FbxNode) -> None:
    root.fmt = None
    for _, n in root.walk():
        n.fmt = None
