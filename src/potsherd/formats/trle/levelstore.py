"""The family's own storages for Tomb Raider levels (``layouts/levels.layout``).

* ``zchunk_*``: TR4/TR5's zlib chunks (u32 inflated size, u32 stored size, the
  stream).  The content is decoded into its records; the stream is written back
  byte for byte either by the zlib settings found to reproduce it (kept in the
  value: level, window bits, memory level, strategy) or, when no zlib setting
  does (levels written by other deflaters), from the stored stream itself,
  reused while the content re-encodes to the same bytes (CRC-32 checked); an
  edited content is recompressed.
* ``rest_bytes``: the bytes left in the enclosing block (pixels, padding).
* ``per_layer_*``: TR5 room faces and vertices, counted by the layer table.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from ...core.compress import inflate
from ...core.errors import EncodeError, FormatError, JsonFormatError, LimitError
from ...core.expr import Scope
from ...core.layout import JsonCtx, hex_to_bytes
from ...core.layout.sized import reading
from ...core.layout.storages import Storage
from ...core.stream import Reader, Writer

#: what a chunk whose stream could not be reproduced is recompressed with once edited
DEFAULT_ZLIB = (6, 15, 8, 0)

#: zlib levels that write each FLEVEL of the stream header (RFC 1950)
_LEVELS_BY_FLEVEL = {0: (1, 0), 1: (5, 4, 3, 2), 2: (6,), 3: (9, 8, 7)}


def deflate(raw: bytes, settings: tuple[int, int, int, int]) -> bytes:
    level, wbits, mem, strategy = settings
    c = zlib.compressobj(level, zlib.DEFLATED, wbits, mem, strategy)
    return c.compress(raw) + c.flush()


def _reproduces(raw: bytes, stream: bytes, settings: tuple[int, int, int, int]) -> bool:
    """Compress ``raw`` piecewise and stop at the first byte that differs
    from ``stream`` (most wrong settings fail within the first block)."""
    level, wbits, mem, strategy = settings
    c = zlib.compressobj(level, zlib.DEFLATED, wbits, mem, strategy)
    done = 0
    i, step = 0, 1 << 13          # small first: a wrong setting shows in its first block
    view = memoryview(raw)
    while i < len(raw):
        out = c.compress(view[i:i + step])
        i += step
        step = min(step * 2, 1 << 18)
        if out:
            if stream[done:done + len(out)] != out:
                return False
            done += len(out)
    out = c.flush()
    return stream[done:] == out


def find_settings(raw: bytes, stream: bytes) -> tuple[int, int, int, int] | None:
    """The zlib settings (level, wbits, memLevel, strategy) whose output is
    ``stream`` exactly, tried in the order the stream header suggests; None."""
    if len(stream) < 2:
        return None
    cmf, flg = stream[0], stream[1]
    if cmf & 0x0F != 8 or (cmf * 256 + flg) % 31 or flg & 0x20:
        return None
    wbits = (cmf >> 4) + 8
    if wbits > 15:
        return None
    flevel = flg >> 6
    stored_first = len(stream) > 2 and (stream[2] >> 1) & 3 == 0
    tries: list[tuple[int, int, int, int]] = []
    # the default strategy with the default and the largest memory level: what
    # compress()/compress2() and deflateInit() callers write (the other
    # strategies cost a full trial each on every foreign stream)
    for level in _LEVELS_BY_FLEVEL[flevel]:
        if level == 0 and not stored_first:
            continue                  # level 0 writes stored blocks only
        for mem in (8, 9):
            tries.append((level, wbits, mem, 0))
    for t in tries:
        if _reproduces(raw, stream, t):
            return t
    return None


class RestBytes(Storage):
    """The bytes left in the enclosing block (decoded data, not opaque)."""

    min_size = 0

    def decode(self, r: Reader, s: Scope) -> Any:
        return r.read(r.remaining)

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, (bytes, bytearray)):
            raise EncodeError(f"expected bytes, found {type(v).__name__}")
        w.write(bytes(v))

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        return bytes(v).hex()

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        return hex_to_bytes(o, jpath)


class ZChunk(Storage):
    """A TR4/TR5 zlib chunk holding ``record`` (see the module)."""

    min_size = 8

    def __init__(self, record: str, what: str) -> None:
        self.record_name = record
        self.what = what
        self.layout: Any = None

    def describe(self) -> str:
        return f"zlib chunk of {self.record_name}"

    @property
    def item(self):
        return self.layout.record(self.record_name)

    def decode(self, r: Reader, s: Scope) -> Any:
        start = r.pos
        size, stored = r.unpack(_U32X2)
        r.check_count(stored, 1, f"{self.what} stream")
        stream = r.read(stored)
        raw = inflate(stream, expected_size=size, input_size=len(r.buf), limits=s.limits,
                      offset=start + 8, what=f"{self.what} chunk")
        if len(raw) != size:
            raise FormatError(f"{self.what} chunk inflates to {len(raw)} bytes, its header "
                              f"says {size}", offset=start, expected=size, found=len(raw))
        settings = find_settings(raw, stream)
        sub = Reader(raw, 0, len(raw), s.limits)
        spans, s.spans = s.spans, None       # offsets inside the inflated bytes
        try:
            with reading(s, sub):
                content = self.item.decode(sub, s)
        except LimitError:
            raise
        except FormatError as e:
            inner = e.offset
            e.message = f"{e.message} (offset {inner} of the inflated {self.what} chunk)"
            e.offset = start
            raise
        finally:
            s.spans = spans
        if sub.remaining:
            raise FormatError(f"{self.what} chunk: {sub.remaining} inflated bytes left over",
                              offset=start)
        return {"zlib": list(settings) if settings else None,
                "stored": None if settings else stream,
                "crc32": zlib.crc32(raw), "content": content}

    def content_bytes(self, v: dict, s: Scope) -> bytes:
        w = Writer()
        self.item.encode(w, v["content"], s)
        return w.getvalue()

    def stream(self, v: Any, s: Scope) -> tuple[bytes, bytes]:
        """(inflated content, stream to store)."""
        if not isinstance(v, dict) or "content" not in v:
            raise EncodeError(f"{self.what} chunk must be a dict with 'content'")
        raw = self.content_bytes(v, s)
        settings = v.get("zlib")
        stored = v.get("stored")
        if settings:
            return raw, deflate(raw, tuple(settings))
        if isinstance(stored, (bytes, bytearray)) and v.get("crc32") == zlib.crc32(raw):
            return raw, bytes(stored)
        return raw, deflate(raw, DEFAULT_ZLIB)

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        raw, stream = self.stream(v, s)
        w.write(_U32X2.pack(len(raw), len(stream)))
        w.write(stream)

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        return {"zlib": v.get("zlib"),
                "stored": bytes(v["stored"]).hex() if v.get("stored") is not None else None,
                "crc32": v.get("crc32"), "content": self.item.to_json(v["content"], ctx)}

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, dict) or "content" not in o:
            raise JsonFormatError(f"{self.what} chunk must be an object with 'content'", path=jpath)
        settings = o.get("zlib")
        if settings is not None:
            if (not isinstance(settings, list) or len(settings) != 4
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in settings)):
                raise JsonFormatError("zlib settings must be [level, wbits, memLevel, strategy]",
                                      path=jpath + ".zlib")
            level, wbits, mem, strategy = settings
            if not (0 <= level <= 9 and 9 <= wbits <= 15 and 1 <= mem <= 9 and 0 <= strategy <= 4):
                raise JsonFormatError(f"zlib settings out of range: {settings}", path=jpath + ".zlib")
        stored = o.get("stored")
        crc = o.get("crc32")
        if crc is not None and (not isinstance(crc, int) or isinstance(crc, bool)):
            raise JsonFormatError("crc32 must be an integer", path=jpath + ".crc32")
        return {"zlib": settings,
                "stored": hex_to_bytes(stored, jpath + ".stored") if stored is not None else None,
                "crc32": crc, "content": self.item.from_json(o["content"], ctx, jpath + ".content")}

    def opaque_size(self, v: Any) -> int:
        return self.item.opaque_size(v["content"])


class PerLayer(Storage):
    """TR5 room geometry: one ``record`` per row of the room's layer table,
    its counts taken from that row."""

    min_size = 0

    def __init__(self, record: str, counts: tuple[str, ...]) -> None:
        self.record_name = record
        self.counts = counts
        self.layout: Any = None

    def describe(self) -> str:
        return f"{self.record_name} per layer"

    def _rows(self, s: Scope) -> list[dict]:
        layers = s.lookup("layers")
        if isinstance(layers, np.ndarray) and layers.dtype.names:
            cols = [layers[c].astype(np.int64).tolist() for c in self.counts]
            return [dict(zip(self.counts, vals)) for vals in zip(*cols)]
        return [{c: int(row[c]) for c in self.counts} for row in layers]

    def decode(self, r: Reader, s: Scope) -> Any:
        item = self.layout.record(self.record_name)
        out = []
        for i, frame in enumerate(self._rows(s)):
            s.push(frame)
            try:
                out.append(item.decode(r, s))
            except FormatError as e:
                raise e.prepend(f"[{i}]")
            finally:
                s.pop()
        return out

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        item = self.layout.record(self.record_name)
        rows = self._rows(s)
        if not isinstance(v, list) or len(v) != len(rows):
            raise EncodeError(f"{self.record_name}: expected one entry per layer ({len(rows)})")
        for i, (frame, x) in enumerate(zip(rows, v)):
            s.push(frame)
            try:
                item.encode(w, x, s)
            except FormatError as e:
                raise e.prepend(f"[{i}]")
            finally:
                s.pop()

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        item = self.layout.record(self.record_name)
        return [item.to_json(x, ctx) for x in v]

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, list):
            raise JsonFormatError("expected a list (one entry per layer)", path=jpath)
        item = self.layout.record(self.record_name)
        return [item.from_json(x, ctx, f"{jpath}[{i}]") for i, x in enumerate(o)]


class VertexGap(Storage):
    """TR5 rooms: the bytes between the end of the layers' faces (12-byte quads,
    10-byte triangles, counted per layer) and ``vertex_start``."""

    min_size = 0

    def count(self, s: Scope) -> int:
        layers = s.lookup("layers")
        if isinstance(layers, np.ndarray) and layers.dtype.names:
            faces = int(12 * layers["rectangle_count"].astype(np.int64).sum()
                        + 10 * layers["triangle_count"].astype(np.int64).sum())
        else:
            faces = sum(12 * int(x["rectangle_count"]) + 10 * int(x["triangle_count"]) for x in layers)
        return int(s.lookup("vertex_start")) - int(s.lookup("poly_start")) - faces

    def decode(self, r: Reader, s: Scope) -> Any:
        n = self.count(s)
        r.check_count(n, 1, "gap before the vertices")
        return r.read(n)

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, (bytes, bytearray)) or len(v) != self.count(s):
            raise EncodeError(f"the gap before the vertices must be {self.count(s)} bytes")
        w.write(bytes(v))

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        return bytes(v).hex()

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        return hex_to_bytes(o, jpath)


import struct as _struct  # noqa: E402

_U32X2 = _struct.Struct("<II")


def level_storages() -> dict[str, Storage]:
    return {"zchunk_pixels": ZChunk("level_pixels", "texture"),
            "zchunk_tr4_level": ZChunk("tr4_level_data", "level data"),
            "rest_bytes": RestBytes(),
            "per_layer_faces": PerLayer("tr5_layer_faces", ("rectangle_count", "triangle_count")),
            "per_layer_vertices": PerLayer("tr5_layer_vertices", ("vertex_count",)),
            "vertex_gap": VertexGap()}


def level_data(root: dict) -> dict:
    """The record holding rooms, meshes, items...: the root (TR1-TR3) or the
    level chunk's content (TR4, TR5)."""
    lvl = root.get("level")
    if isinstance(lvl, dict) and "content" in lvl:
        return lvl["content"]
    if isinstance(lvl, dict):
        return lvl
    if isinstance(lvl, (bytes, bytearray)):   # TR5's level chunk kept raw
        return {}
    return root
