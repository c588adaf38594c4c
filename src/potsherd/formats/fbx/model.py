"""The FBX node tree shared by the binary and ASCII codecs.

A node is ``name`` + ``props`` + ``children``.  ``children is None`` means the
node had no null record (binary) / no braces (ASCII); ``[]`` means an empty
block.  Binary properties are ``(code, value)`` tuples with the FBX type code
(``Y C B Z I F D L S R`` or an array code with an :class:`FbxArray` value).
ASCII properties use the lexical kinds ``s`` (string, decoded bytes), ``n``
(number, kept as its source spelling), ``w`` (bare word) and ``*`` (an
:class:`FbxArray` of ASCII numbers) because ASCII has no type codes.
"""
from __future__ import annotations

import zlib
from typing import Any, Iterator

import numpy as np

from ...core.errors import FormatError, LimitError, ValueFormatError
from ...core.limits import DEFAULT_LIMITS, Limits

#: element dtypes of binary array codes (little-endian; big-endian files swap)
ARRAY_DTYPES: dict[str, str] = {"f": "f4", "d": "f8", "l": "i8", "i": "i4", "b": "u1", "c": "u1"}
SCALAR_CODES = "YCBZIFDL"
ARRAY_CODES = "fdlibc"


def array_dtype(code: str, big_endian: bool = False) -> np.dtype:
    return np.dtype((">" if big_endian else "<") + ARRAY_DTYPES[code])


class FbxNode:
    """One FBX node; ``zero_end`` marks a binary record whose EndOffset was 0.

    ``props`` may be *pending*: the binary decoder validates every property
    list in one tight scan but builds the ``(code, value)`` tuples only when
    ``props`` is first read (most nodes of a scene are never looked at, and
    building ~3 tuples per node was most of the decode time).  While pending,
    ``_pending`` is the decoder's property source and ``_props`` the offset of
    the node's record in it (no per-node tuple: that too was measurable);
    once built (or assigned) ``_props`` is a plain list and ``_pending`` None.

    ``children`` may be pending the same way: the decoder validates the whole
    file but creates a node's child nodes only when its ``children`` is first
    read (``_kids_source`` the source, ``_children`` the node's record offset
    while pending).  Creating every node object up front, and the collector
    passes that so many new objects trigger, was over a third of the decode.
    """

    __slots__ = ("name", "_props", "_pending", "_children", "_kids_source", "zero_end", "fmt")

    def __init__(self, name: bytes, props: list | None = None,
                 children: list | None = None, zero_end: bool = False) -> None:
        self.name = name
        self._props = props if props is not None else []
        self._pending = None
        self._children = children
        self._kids_source = None
        self.zero_end = zero_end
        #: ASCII layout (source trivia between tokens); None = canonical
        self.fmt: list | None = None

    @property
    def props(self) -> list:
        """The property list, built from the source bytes on first access."""
        source = self._pending
        if source is not None:
            self._props = source.parse(self._props)
            self._pending = None
        return self._props

    @props.setter
    def props(self, props: list) -> None:
        self._props = props
        self._pending = None

    @property
    def children(self) -> list | None:
        """Child nodes (None: no null record), created from the source bytes on
        first access."""
        source = self._kids_source
        if source is not None:
            self._children = source.children(self._children)
            self._kids_source = None
        return self._children

    @children.setter
    def children(self, children: list | None) -> None:
        self._children = children
        self._kids_source = None

    def pending_children(self) -> bool:
        """True while the child nodes are not created yet."""
        return self._kids_source is not None

    def first_string(self) -> bytes | str | None:
        """The value of the first property when it is a string (code S), without
        building a pending list: Properties70 rows are indexed by name this way
        and their values built only when a property is read."""
        source = self._pending
        if source is not None:
            return source.first_string(self._props)
        props = self._props
        return props[0][1] if props and props[0][0] == "S" else None

    def pending_props(self) -> tuple | None:
        """``(source, start, end, count)`` while the properties are unbuilt
        (the writer then copies ``source.data[start:end]``), else None."""
        source = self._pending
        if source is None:
            return None
        return (source, *source.span(self._props))

    def __repr__(self) -> str:
        n = "null" if self.children is None else len(self.children)
        return f"FbxNode({self.name!r}, {len(self.props)} props, children={n})"

    # --- navigation ----------------------------------------------------
    def find(self, name: bytes | str) -> "FbxNode | None":
        """The first child called ``name``."""
        if isinstance(name, str):
            name = name.encode()
        for c in self.children or ():
            if c.name == name:
                return c
        return None

    def find_all(self, name: bytes | str) -> list["FbxNode"]:
        if isinstance(name, str):
            name = name.encode()
        return [c for c in self.children or () if c.name == name]

    def walk(self) -> Iterator[tuple[tuple[bytes, ...], "FbxNode"]]:
        """(path, node) for every descendant, depth first, without recursion."""
        stack: list[tuple[tuple[bytes, ...], FbxNode]] = [
            ((c.name,), c) for c in reversed(self.children or ())]
        while stack:
            path, node = stack.pop()
            yield path, node
            for c in reversed(node.children or ()):
                stack.append((path + (c.name,), c))


class FbxArray:
    """An array property.  Values are inflated lazily, on first access.

    ``payload`` is the bytes exactly as stored (zlib stream or raw elements);
    the writer reuses it while the values are unchanged, so a file whose
    compressor cannot be reproduced still round-trips byte for byte.
    """

    __slots__ = ("code", "count", "encoding", "payload", "offset", "big_endian",
                 "limits", "level", "_values", "_digest", "budget", "_charged")

    def __init__(self, code: str, values: np.ndarray | None = None, *, count: int | None = None,
                 encoding: int = 0, payload: bytes | None = None, offset: int | None = None,
                 big_endian: bool = False, limits: Limits = DEFAULT_LIMITS,
                 level: int | None = None, budget: Any = None) -> None:
        self.code = code
        #: the document's shared inflation budget (core.compress.DocumentBudget)
        self.budget = budget
        self._charged = False
        #: zlib level for recompression when there is no payload to reuse
        self.level = level
        self.encoding = encoding
        self.payload = payload
        self.offset = offset
        self.big_endian = big_endian
        self.limits = limits
        self._values = None
        self._digest = None
        if values is not None:
            self._values = np.asarray(values)
            self.count = len(self._values) if count is None else count
        else:
            self.count = count or 0

    @property
    def dtype(self) -> np.dtype:
        return array_dtype(self.code, self.big_endian)

    @property
    def zlib_level(self) -> int | None:
        """The compression level named by the zlib header (1, 6, ...)."""
        if self.encoding != 1:
            return None
        if not self.payload or len(self.payload) < 2:
            return self.level
        return {0x01: 1, 0x5E: 2, 0x9C: 6, 0xDA: 9}.get(self.payload[1], 6)

    def raw_bytes(self) -> bytes:
        """The uncompressed element bytes as stored (file byte order)."""
        if self.encoding == 0:
            return self.payload or b""
        n = self.count * self.dtype.itemsize
        if n > self.limits.max_inflated:
            raise LimitError(f"array of {n} inflated bytes exceeds max_inflated",
                             offset=self.offset, found=n)
        if self.budget is not None and not self._charged:
            self.budget.charge(n, self.offset, "the compressed arrays")
            self._charged = True
        d = zlib.decompressobj()
        try:
            out = d.decompress(self.payload or b"", n)
            if len(out) == n and not d.eof:
                # the stream may still hold its end marker and checksum
                rest = d.decompress(d.unconsumed_tail, 1)
                if rest:
                    raise FormatError("compressed array inflates to more than its count",
                                      offset=self.offset, expected=n)
        except zlib.error as e:
            raise FormatError(f"bad zlib stream in array: {e}", offset=self.offset) from None
        if len(out) != n or not d.eof:
            raise FormatError("compressed array does not inflate to its declared count",
                              offset=self.offset, expected=n, found=len(out))
        return out

    @property
    def values(self) -> np.ndarray:
        if self._values is None:
            raw = self.raw_bytes()
            self._values = np.frombuffer(raw, self.dtype).copy()
            self._digest = (len(raw), zlib.crc32(raw))
        return self._values

    @values.setter
    def values(self, v) -> None:
        self._values = np.asarray(v)
        self.count = len(self._values)
        if self.payload is not None and self.level is None:
            self.level = self.zlib_level
        self.payload = None

    def loaded(self) -> bool:
        return self._values is not None

    def unchanged(self) -> bool:
        """True when the stored payload still encodes the current values."""
        if self.payload is None:
            return False
        if self._values is None:
            return True
        if self._digest is None:
            return False
        raw = np.ascontiguousarray(self._values, dtype=self.dtype).tobytes()
        return (len(raw), zlib.crc32(raw)) == self._digest

    def reproducible(self) -> bool:
        """Does recompressing at the header's level give the stored payload?"""
        if self.encoding != 1:
            return True
        raw = self.raw_bytes()
        level = self.zlib_level
        return level is not None and deflate(raw, level) == self.payload

    def encoded(self, big_endian: bool, level: int | None = None) -> tuple[int, int, bytes]:
        """(count, encoding, payload) for writing in the given byte order."""
        if self.unchanged() and big_endian == self.big_endian:
            return self.count, self.encoding, self.payload  # type: ignore[return-value]
        vals = np.asarray(self.values)
        raw = np.ascontiguousarray(vals, dtype=array_dtype(self.code, big_endian)).tobytes()
        if self.encoding == 1:
            return len(vals), 1, deflate(raw, level or self.zlib_level or 1)
        return len(vals), self.encoding, raw

    def __repr__(self) -> str:
        return f"FbxArray({self.code!r}, count={self.count}, encoding={self.encoding})"


def deflate(raw: bytes, level: int) -> bytes:
    c = zlib.compressobj(level)
    return c.compress(raw) + c.flush()


# ----------------------------------------------------------------------------
# FileId / footer id (docs/formats/fbx.md, "Binary container")

_FILEID_KEY = bytes.fromhex("18b31aea8624fcc38ec980239725c2ff")
_FOOTER_KEY = bytes.fromhex("fabc9b09d0c9e467b176ca821dff1978")
_TIME_PICK = (17, 18, 5, 6, 11, 12, 8, 9, 20, 21, 0, 1, 2, 3, 14, 15)
FOOTER_MAGIC = bytes.fromhex("f85a8c6adef5d97eece90ce3758f290b")
BLENDER_TIME = b"1970-01-01 10:00:00:000"


def _time_bytes(creation_time: bytes) -> list[int]:
    if len(creation_time) < 22:
        raise ValueFormatError(f"CreationTime {creation_time!r} is not YYYY-MM-DD HH:MM:SS:mmm")
    return [creation_time[i] for i in _TIME_PICK]


def _prefix_xor(m: list[int]) -> None:
    for i in range(1, 16):
        m[i] ^= m[i - 1]


def file_id(creation_time: bytes) -> bytes:
    """The 16-byte FileId the SDK derives from CreationTime."""
    m = _time_bytes(creation_time)
    _prefix_xor(m)
    return bytes(a ^ b for a, b in zip(m, _FILEID_KEY))


def footer_id(creation_time: bytes) -> bytes:
    """The 16-byte id that opens the footer, derived from CreationTime."""
    v = _time_bytes(creation_time)
    m = list(v)
    for i in range(2, 16):
        m[i] ^= m[i - 2]
    m = [a ^ b for a, b in zip(m, v)]
    _prefix_xor(m)
    return bytes(a ^ b for a, b in zip(m, _FOOTER_KEY))
