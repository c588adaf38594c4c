"""A decoded document as the viewer's tree: one node per field with its byte span.

The tree is built lazily, one level at a time (``children`` up to ``page``
entries, ``more`` saying how many follow), so a file of a million vertices
opens as fast as a small one.  A node's ``path`` (``/root/vertices/12``) is
what the page sends back to expand it, and what :func:`field_at` answers for
a clicked byte.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.layout import Ragged
from ..core.spans import SpanMap
from ..core.values import F32NaN, F64NaN, RawString

PAGE = 200          #: children listed per request
TABLE_PAGE = 100    #: rows of a table (record array) listed per request
PREVIEW = 16        #: values shown inline for a numeric array
BYTES_PREVIEW = 64  #: bytes shown inline for an opaque field


def _fbx_node_class():
    try:
        from ..formats.fbx.model import FbxNode
    except ImportError:  # pragma: no cover - the family is part of the package
        return ()
    return FbxNode


def _scalar(v: Any) -> Any:
    if isinstance(v, (F32NaN, F64NaN)):
        return "NaN"
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else repr(f)
    return str(v)


def _type_name(dt: np.dtype) -> str:
    """A column's type as the layouts spell it: ``i4``, ``f4[3]``, ``u1``, ``V3``."""
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return f"{_type_name(base)}[{'×'.join(str(n) for n in shape)}]"
    return dt.str.lstrip("<>|=")


def _cell(x: Any) -> Any:
    """One table cell as JSON: numbers, lists for sub-arrays, text or hex for bytes."""
    if isinstance(x, np.ndarray):
        return [_cell(e) for e in x.tolist()]
    if isinstance(x, (list, tuple)):
        return [_cell(e) for e in x]
    if isinstance(x, (bytes, bytearray, memoryview)):
        b = bytes(x)
        text = b.rstrip(b"\0")
        return text.decode("latin-1") if text and all(32 <= c < 127 for c in text) else b.hex()
    return _scalar(x)


def _bytes_value(b: bytes, encoding: str) -> dict:
    out: dict = {"hex": bytes(b[:BYTES_PREVIEW]).hex(), "size": len(b)}
    if isinstance(b, RawString) and b.raw_len is not None:
        out["storedLength"] = b.raw_len
    head = bytes(b[:256]).split(b"\0", 1)[0]
    if head:
        try:
            text = head.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            text = None
        if text is not None and text.isprintable():
            out["text"] = text
    return out


class DocTree:
    """Walks a document and its :class:`SpanMap` on request."""

    def __init__(self, root: Any, spans: SpanMap, encoding: str = "latin-1") -> None:
        self.root = root
        self.spans = spans
        self.encoding = encoding
        self.fbx_node = _fbx_node_class()

    # --- navigation -----------------------------------------------------
    def _entries(self, v: Any) -> list[tuple[Any, Any, tuple | None]]:
        """(key, child value, span) of a container, in document order."""
        if isinstance(v, dict):
            spans = self.spans.of(v)
            return [(k, x, spans.get(k)) for k, x in v.items()]
        if isinstance(v, list):
            spans = self.spans.of(v)
            return [(i, x, spans.get(i)) for i, x in enumerate(v)]
        if self.fbx_node and isinstance(v, self.fbx_node):
            spans = self.spans.of(v)
            props = v.props
            out: list = [("props", _FbxProps(props), spans.get("props"))] if props else []
            for i, child in enumerate(v.children or []):
                out.append((i, child, self.spans.get(child, "record")))
            return out
        if isinstance(v, _FbxProps):
            return [(i, p[1], None) for i, p in enumerate(v.props)]
        if isinstance(v, Ragged):  # (its columns and flat arrays, each an array)
            return [(k, v[k], None) for k in v.keys()]
        return []

    def _child(self, v: Any, key: str) -> tuple[Any, tuple | None]:
        for k, x, span in self._entries(v):
            if str(k) == key:
                return x, span
        raise KeyError(key)

    def resolve(self, path: str) -> tuple[Any, tuple | None, str]:
        """The value at ``/root/a/3`` with its span; ``KeyError`` when absent."""
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] != "root":
            raise KeyError(path)
        v, span = self.root, None
        for part in parts[1:]:
            v, span = self._child(v, part)
        return v, span, "/" + "/".join(parts)

    # --- rendering ------------------------------------------------------
    def node(self, path: str, *, offset: int = 0, page: int = PAGE) -> dict:
        v, span, path = self.resolve(path)
        return self._describe(v, path.rsplit("/", 1)[-1], path, span, expand=True,
                              offset=offset, page=page)

    def _describe(self, v: Any, name: str, path: str, span: tuple | None, *,
                  expand: bool, offset: int = 0, page: int = PAGE) -> dict:
        out: dict = {"name": name, "path": path, "span": list(span) if span else None}
        if isinstance(v, np.ndarray) and v.dtype.names is not None and v.ndim == 1:
            # a record array is a table: its columns by name and type, rows a page at a time
            out["kind"] = "table"
            out["columns"] = [{"name": n, "type": _type_name(v.dtype.fields[n][0])}
                              for n in v.dtype.names]
            out["count"] = int(v.shape[0])
            if span and v.shape[0]:
                out["itemSize"] = (span[1] - span[0]) // v.shape[0]
            if expand:
                rows = v[offset:offset + TABLE_PAGE]
                out["offset"] = offset
                out["rows"] = [[_cell(c) for c in row] for row in rows.tolist()]
                out["more"] = max(0, int(v.shape[0]) - offset - len(rows))
            return out
        if isinstance(v, np.ndarray):
            out["kind"] = "array"
            out["dtype"] = str(v.dtype)
            out["shape"] = list(v.shape)
            flat = v.reshape(-1)[:PREVIEW] if v.dtype.names is None else v[:PREVIEW]
            out["preview"] = [_scalar(x) for x in flat.tolist()] if v.dtype.names is None \
                else [str(x) for x in flat]
            if span and v.shape and v.shape[0]:
                out["itemSize"] = (span[1] - span[0]) // v.shape[0]
            return out
        if self.fbx_node and isinstance(v, self.fbx_node):
            out["kind"] = "node"
            out["label"] = bytes(v.name).decode("utf-8", "replace")
            span = self.spans.get(v, "record")
            out["span"] = list(span) if span else out["span"]
        elif isinstance(v, (dict, Ragged)):
            out["kind"] = "record"
        elif isinstance(v, (list, _FbxProps)):
            out["kind"] = "list"
        elif isinstance(v, (bytes, bytearray, memoryview)):
            out["kind"] = "bytes"
            out["value"] = _bytes_value(bytes(v), self.encoding)
            return out
        elif hasattr(v, "values") and hasattr(v, "code"):   # FbxArray
            out["kind"] = "array"
            out["code"] = v.code
            out["count"] = int(v.count)
            try:
                vals = np.asarray(v.values).reshape(-1)[:PREVIEW]
                out["preview"] = [_scalar(x) for x in vals.tolist()]
            except Exception as e:  # noqa: BLE001 - a broken array is shown, not fatal
                out["error"] = str(e)
            return out
        else:
            out["kind"] = "value"
            out["value"] = _scalar(v) if not isinstance(v, str) else v
            return out
        entries = self._entries(v)
        out["count"] = len(entries)
        if expand:
            chunk = entries[offset:offset + page]
            out["offset"] = offset
            out["children"] = [self._describe(x, str(k), f"{path}/{k}", sp, expand=False)
                               for k, x, sp in chunk]
            out["more"] = max(0, len(entries) - offset - len(chunk))
        return out

    # --- from a byte to its field ---------------------------------------
    def field_at(self, offset: int) -> dict | None:
        """The deepest field whose span holds ``offset`` (its path and span)."""
        v, path, best = self.root, "/root", None
        while True:
            hit = None
            for k, x, span in self._entries(v):
                if self.fbx_node and isinstance(x, self.fbx_node):
                    span = self.spans.get(x, "record")
                if span and span[0] <= offset < span[1]:
                    hit = (k, x, span)
                    break
            if hit is None:
                return best
            k, v, span = hit
            path = f"{path}/{k}"
            best = {"path": path, "span": list(span)}
            if isinstance(v, np.ndarray) and v.shape and v.shape[0]:
                size = (span[1] - span[0]) // v.shape[0]
                if size:
                    i = (offset - span[0]) // size
                    start = span[0] + i * size
                    best = {"path": path, "span": list(span), "item": int(i),
                            "itemSpan": [start, start + size]}
                return best


class _FbxProps:
    """The property list of an FBX node, as a tree level of its own."""

    __slots__ = ("props",)

    def __init__(self, props: list) -> None:
        self.props = props
