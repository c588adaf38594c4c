"""The generic PERS block: Darkstar's persistent-object container.

A block is ``"PERS"``, a u32 size word (bit 31 = ALIGN_DWORD flag, low 31 bits
= bytes after the 8-byte header), an i16 class-name length, the name padded to
even length, an i32 class version, the payload, possibly slack (the engine
seeks to the block end after reading), then a pad to 2 (or 4 with the flag)
bytes that may be missing at the end of a file.  Every one of those bytes is
kept.  Payloads of known (class, version) pairs are layout records built from
``structures.json``; anything else stays an opaque block, written back as read.

The size word and pad are written as stored while they still describe the
block; when an edit changes the payload size, the size is recomputed (flag
kept) and the pad becomes zeros.
"""
from __future__ import annotations

import struct
import threading
from typing import Any

from ...core.errors import (EncodeError, FormatError, JsonFormatError, LimitError, MagicError,
                            TruncatedError, ValueFormatError)
from ...core.expr import Scope
from ...core.fastpath.compiled import fast_layout
from ...core.layout import JsonCtx, Layout, Record, Storage, bounded_reader, \
    hex_to_bytes, reading, text_or_hex, text_or_hex_back
from ...core.stream import Reader, Writer, cached_struct
from .structs import payload_rows, structures

TAG = b"PERS"
ALIGN_DWORD = 0x80000000
MAX_NAME = 128
#: deepest PERS nesting accepted (real files nest 2 levels: shape -> mesh)
MAX_NESTING = 32

_I32 = cached_struct("<i")
_U32 = cached_struct("<I")
_I16 = cached_struct("<h")

#: how many compiled payload decodes are under way in this thread
_ATTEMPT = threading.local()


def class_payload(block: Any, class_name: bytes) -> dict | None:
    """The decoded payload of ``block`` when it is a PERS block of ``class_name``,
    else None: a nested block is whatever class its bytes name (a damaged or
    hostile shape may hold a mesh where its material list belongs), and a
    version without a layout stays opaque bytes."""
    if not isinstance(block, dict) or bytes(block.get("className", b"")) != class_name:
        return None
    payload = block.get("payload")
    return payload if isinstance(payload, dict) else None


class _Declined(Exception):
    """A nested payload the compiled decoder declined (never escapes a decode)."""


BLOCK_KEYS = ("tag", "size", "className", "namePad", "version", "payload", "slack", "pad")


def _header_structs() -> tuple[struct.Struct, struct.Struct, struct.Struct]:
    """The block header formats, from the structures data (``opening``,
    ``fileInfo`` = size word + name length, ``version``)."""
    h = structures()["header"]
    return cached_struct(h["opening"]), cached_struct(h["fileInfo"]), cached_struct(h["version"])


class PersBlock(Storage):
    """One PERS block; the payload codec is picked by (class name, version)."""

    min_size = 14

    def __init__(self) -> None:
        self.payloads: dict[tuple[bytes, int], Record] = {}
        self.opening, self.file_info, self.version_st = _header_structs()

    def describe(self) -> str:
        return "pers-block"

    def record_for(self, name: bytes, version: int) -> Record | None:
        return self.payloads.get((bytes(name), version))

    # --- decode ---------------------------------------------------------
    def decode(self, r: Reader, s: Scope) -> Any:
        start = r.pos
        if len(s.frames) > min(MAX_NESTING, s.limits.max_depth):
            raise LimitError(f"PERS blocks nested deeper than {MAX_NESTING} levels", offset=start)
        tag = r.unpack(self.opening)[0]
        if tag != TAG:
            raise MagicError(f"expected a PERS block, found {tag!r}", offset=start,
                             expected="PERS", found=tag.hex())
        size, name_len = r.unpack(self.file_info)
        data_size = size & ~ALIGN_DWORD
        if data_size > r.end - (start + 8):
            raise TruncatedError(f"PERS block of {data_size} data bytes exceeds the "
                                 f"{r.end - start - 8} bytes left", offset=start + 4,
                                 expected=f"<= {r.end - start - 8}", found=data_size)
        end = start + 8 + data_size
        sub = bounded_reader(r, r.pos, end - r.pos)
        if not 0 <= name_len <= MAX_NAME:
            raise ValueFormatError(f"class name length {name_len} outside 0..{MAX_NAME}",
                                   offset=start + 8, path="className")
        try:
            name = sub.read(name_len)
            name_pad = sub.read(name_len & 1)
            version = sub.unpack(self.version_st)[0]
        except FormatError as e:
            raise e.prepend("className")
        rec = self.record_for(name, version)
        if rec is None:
            payload: Any = sub.tail()
        else:
            with reading(s, sub):
                payload = self.decode_payload(rec, sub, s)
        slack_at = sub.pos
        slack = sub.tail()
        r.pos = end
        align = 4 if size & ALIGN_DWORD else 2
        pad = r.read(min((-data_size) % align, r.remaining))
        block = {"tag": tag, "size": size, "className": name, "namePad": name_pad,
                 "version": version, "payload": payload, "slack": slack, "pad": pad}
        if s.spans is not None:
            name_at = start + 10
            payload_at = name_at + 2 * ((name_len + 1) // 2) + 4
            for key, a, b in (("tag", start, start + 4), ("size", start + 4, start + 8),
                              ("className", name_at, name_at + name_len),
                              ("namePad", name_at + name_len, payload_at - 4),
                              ("version", payload_at - 4, payload_at),
                              ("payload", payload_at, slack_at), ("slack", slack_at, end),
                              ("pad", end, r.pos)):
                s.spans.add(block, key, a, b)
        return block

    def decode_payload(self, rec: Record, sub: Reader, s: Scope) -> Any:
        """The payload record on the compiled decoder when it takes it, else
        on the reference (which words every error, with its offset)."""
        fast = fast_layout(rec.layout)
        if fast is not None:
            inside = getattr(_ATTEMPT, "depth", 0)
            _ATTEMPT.depth = inside + 1
            try:
                done = fast.decode_within(rec.name, sub, s)
            finally:
                _ATTEMPT.depth = inside
            if done is not None:
                return done[0]
            if inside:
                # inside an enclosing block's compiled decode: it declines too, so
                # the reference reads the outermost block once (not once per level)
                raise _Declined
        try:
            return rec.decode(sub, s)
        except FormatError as e:
            if e.offset is None:
                e.offset = sub.pos
            raise e.prepend("payload")

    # --- encode ---------------------------------------------------------
    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, dict):
            raise EncodeError(f"a PERS block is a dict, found {type(v).__name__}")
        missing = [k for k in BLOCK_KEYS if k not in v]
        if missing:
            raise EncodeError(f"PERS block lacks {missing}")
        extra = set(v) - set(BLOCK_KEYS)
        if extra:
            raise EncodeError(f"unknown PERS block fields {sorted(extra)}")
        name, name_pad = bytes(v["className"]), bytes(v["namePad"])
        if len(name) > MAX_NAME:
            raise EncodeError(f"class name longer than {MAX_NAME} bytes", path="className")
        if len(name_pad) != (len(name) & 1):
            raise EncodeError(f"class name of {len(name)} bytes takes {len(name) & 1} pad bytes, "
                              f"found {len(name_pad)}", path="namePad")
        body = Writer()
        body.pack(_I16, len(name))
        body.write(name)
        body.write(name_pad)
        version = v["version"]
        try:
            body.pack(self.version_st, version)
        except (struct.error, TypeError):
            raise EncodeError(f"version {version!r} is not an i32", path="version") from None
        rec = self.record_for(name, version)
        payload = v["payload"]
        if rec is None:
            if not isinstance(payload, (bytes, bytearray)):
                raise EncodeError(f"{name!r} v{version} has no codec: its payload must be raw bytes",
                                  path="payload")
            body.write(bytes(payload))
        else:
            try:
                rec.encode(body, payload, s)
            except FormatError as e:
                raise e.prepend("payload")
        body.write(bytes(v["slack"]))
        data = body.getvalue()
        size = v["size"]
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= 0xFFFFFFFF:
            raise EncodeError(f"size word {size!r} is not a u32", path="size")
        pad = bytes(v["pad"])
        align = 4 if size & ALIGN_DWORD else 2
        if size & ~ALIGN_DWORD != len(data):
            if len(data) > ~ALIGN_DWORD & 0xFFFFFFFF:
                raise EncodeError(f"PERS block of {len(data)} bytes is too large", path="size")
            size = (size & ALIGN_DWORD) | len(data)
            pad = bytes((-len(data)) % align)
        elif len(pad) > (-len(data)) % align:
            raise EncodeError(f"{len(pad)} pad bytes after a block that needs "
                              f"{(-len(data)) % align}", path="pad")
        tag = bytes(v["tag"])
        if len(tag) != 4:
            raise EncodeError("the block tag is 4 bytes", path="tag")
        w.write(tag)
        w.pack(_U32, size)
        w.write(data)
        w.write(pad)

    # --- JSON -----------------------------------------------------------
    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        rec = self.record_for(v["className"], v["version"])
        return {
            "tag": text_or_hex(bytes(v["tag"]), ctx),
            "size": v["size"],
            "className": text_or_hex(bytes(v["className"]), ctx),
            "namePad": bytes(v["namePad"]).hex(),
            "version": v["version"],
            "payload": bytes(v["payload"]).hex() if rec is None else rec.to_json(v["payload"], ctx),
            "slack": bytes(v["slack"]).hex(),
            "pad": bytes(v["pad"]).hex(),
        }

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, dict):
            raise JsonFormatError("a PERS block is an object", path=jpath)
        missing = [k for k in BLOCK_KEYS if k not in o]
        if missing:
            raise JsonFormatError(f"PERS block lacks {missing}", path=jpath)
        extra = set(o) - set(BLOCK_KEYS)
        if extra:
            raise JsonFormatError(f"unknown PERS block fields {sorted(extra)}", path=jpath)
        out: dict[str, Any] = {}
        out["tag"] = text_or_hex_back(o["tag"], ctx, jpath + ".tag")
        for k in ("size", "version"):
            if isinstance(o[k], bool) or not isinstance(o[k], int):
                raise JsonFormatError(f"{k} must be an integer", path=f"{jpath}.{k}")
            out[k] = o[k]
        out["className"] = text_or_hex_back(o["className"], ctx, jpath + ".className")
        for k in ("namePad", "slack", "pad"):
            out[k] = hex_to_bytes(o[k], f"{jpath}.{k}")
        rec = self.record_for(out["className"], out["version"])
        if rec is None:
            out["payload"] = hex_to_bytes(o["payload"], jpath + ".payload")
        else:
            out["payload"] = rec.from_json(o["payload"], ctx, jpath + ".payload")
        return {k: out[k] for k in BLOCK_KEYS}

    def opaque_size(self, v: Any) -> int:
        rec = self.record_for(v["className"], v["version"])
        inner = len(v["payload"]) if rec is None else rec.opaque_size(v["payload"])
        return inner + len(v["slack"])


def build() -> tuple[PersBlock, Layout]:
    """The PERS storage with a payload record for every class/version of the data."""
    pers = PersBlock()
    records: dict[str, list] = {}
    keys: dict[str, tuple[bytes, int]] = {}
    places: dict[str, list] = {}
    for cls, cdef in structures()["structures"].items():
        for ver in (cdef.get("versions") or {}):
            where: list[str] = []
            rows = payload_rows(cls, ver, pers, where)
            if rows is None:
                continue
            rname = f"{cls} v{ver}"
            records[rname] = rows
            places[rname] = where
            keys[rname] = (cls.encode("ascii"), int(ver))
            for place in where:  # the row records of the payload's tables
                if isinstance(place, tuple):
                    records[place[2]] = place[3]
    layout = Layout(records, {"pers": pers})
    for rname, key in keys.items():
        rec = pers.payloads[key] = layout.record(rname)
        for f, place in zip(rec.fields, places[rname]):
            place, key_places = place[:2] if isinstance(place, tuple) else (place, {})
            f.defined_at = place or f.defined_at
            for col in f.storage.item.fields if key_places else ():
                col.defined_at = key_places.get(col.name) or col.defined_at
    return pers, layout


BLOCK, LAYOUT = build()
