"""A table of fixed records stored as one Darkstar LZH stream (the engine's
``LZHWStream::write(sizeof(entry) * n, ...)`` after a ``writeSize``), as the
mission lighting's index table is.

The document holds ``{"rows": structured array, "stream": bytes, "crc": int}``:
the rows are the decoded records (fields, like any table); the stored stream
and the CRC-32 of its decoded bytes let an unedited table be written back as
stored even where :func:`lzh.encode` does not reproduce the writer's bytes (it
does for every engine stream of the corpus; another writer may differ).  Edited rows
(the CRC no longer matches) are compressed afresh.  JSON carries ``stream`` and
``crc`` only when re-encoding would not give the stored bytes back.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from ...core.errors import EncodeError, JsonFormatError, ValueFormatError
from ...core.expr import Scope, compile_expr, source_text
from ...core.layout import JsonCtx, Storage, hex_to_bytes, parse_struct, struct_dtype
from ...core.layout.jsonio import _np_to_json, table_from_columns
from ...core.stream import Reader, Writer
from . import lzh

KEYS = ("rows", "stream", "crc")


class LzhTable(Storage):
    """``count`` records of a struct format, LZH-compressed, decoded as a table."""

    def __init__(self, count: Any, fmt: str, keys: str) -> None:
        self.count_src = count
        self.count = compile_expr(count)
        self.dtype_rows = struct_dtype(parse_struct(fmt, keys))

    def describe(self) -> str:
        return f"lzh-table[{source_text(self.count_src)}]"

    def _n(self, s: Scope, offset: int | None) -> int:
        n = self.count(s)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueFormatError(f"LZH table count {n!r} is not a count of entries",
                                   offset=offset, found=n)
        return n

    # --- bytes ------------------------------------------------------------
    def decode(self, r: Reader, s: Scope) -> Any:
        start = r.pos
        n = self._n(s, start)
        size = n * self.dtype_rows.itemsize
        raw, used = lzh.decode(r.buf, size, r.pos, r.end, limits=r.limits, path="lzh")
        stream = r.read(used)
        rows = np.frombuffer(raw, dtype=self.dtype_rows).copy()
        return {"rows": rows, "stream": stream, "crc": zlib.crc32(raw)}

    def _rows(self, v: Any) -> np.ndarray:
        if not isinstance(v, dict) or "rows" not in v or not set(v) <= set(KEYS):
            raise EncodeError(f"expected an object with rows (and stream, crc), found "
                              f"{type(v).__name__}")
        rows = v["rows"]
        dt = self.dtype_rows
        if isinstance(rows, list):
            try:
                rows = np.array([tuple(r[k] for k in dt.names) for r in rows], dtype=dt)
            except (KeyError, TypeError, ValueError, OverflowError) as e:
                raise EncodeError(f"rows cannot be stored as {list(dt.names)}: {e}",
                                  path="rows") from None
        if not isinstance(rows, np.ndarray) or rows.dtype.names is None \
                or set(rows.dtype.names) != set(dt.names) or rows.ndim != 1:
            raise EncodeError(f"rows must be a table with the columns {list(dt.names)}",
                              path="rows")
        if rows.dtype != dt:
            out = np.zeros(len(rows), dt)
            for k in dt.names:
                if rows[k].dtype.kind == "f" and rows.size:
                    raise EncodeError("integer column holds floats", path=f"rows.{k}")
                out[k] = rows[k]
            rows = out
        return rows

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        rows = self._rows(v)
        n = self._n(s, None)
        if len(rows) != n:
            raise EncodeError(f"the table has {len(rows)} rows, its count "
                              f"{source_text(self.count_src)} says {n}", path="rows")
        w.write(self.stream_of(v, rows))

    @staticmethod
    def stream_of(v: dict, rows: np.ndarray) -> bytes:
        """The stored stream while it still holds these rows, else a new one."""
        raw = np.ascontiguousarray(rows).tobytes()
        stream = v.get("stream")
        if isinstance(stream, (bytes, bytearray)) and v.get("crc") == zlib.crc32(raw):
            return bytes(stream)
        return lzh.encode(raw) if raw else b""

    # --- JSON -------------------------------------------------------------
    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        rows = self._rows(v)
        out: dict[str, Any] = {"rows": _np_to_json(rows, ctx)}
        raw = rows.tobytes()
        stream = v.get("stream")
        if (isinstance(stream, (bytes, bytearray)) and v.get("crc") == zlib.crc32(raw)
                and (lzh.encode(raw) if raw else b"") != bytes(stream)):
            out["stream"] = bytes(stream).hex()   # the engine's bytes, not reproduced
            out["crc"] = v["crc"]
        return out

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, dict) or "rows" not in o or not set(o) <= set(KEYS) \
                or ("stream" in o) != ("crc" in o):
            raise JsonFormatError("expected {\"rows\": ...} (with \"stream\" and \"crc\" "
                                  "together when present)", path=jpath)
        rows = table_from_columns(o["rows"], self.dtype_rows, ctx, jpath + ".rows")
        out: dict[str, Any] = {"rows": rows}
        if "stream" in o:
            crc = o["crc"]
            if isinstance(crc, bool) or not isinstance(crc, int) or not 0 <= crc < 1 << 32:
                raise JsonFormatError("crc must be a 32-bit unsigned integer", path=jpath + ".crc")
            out["stream"] = hex_to_bytes(o["stream"], jpath + ".stream")
            out["crc"] = crc
        return out

    def opaque_size(self, v: Any) -> int:
        return 0   # decoded: the stored stream is a cache of the rows' compressed form
