"""Byte streams: a bounds-checked reader and a chunked writer.

The reader never allocates before checking that the bytes exist, so a count
of 2**31 in a 100-byte file is a :class:`CountError`, not a memory blow-up.
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .errors import CountError, LimitError, TruncatedError
from .limits import DEFAULT_LIMITS, Limits

_STRUCTS: dict[str, struct.Struct] = {}


def cached_struct(fmt: str) -> struct.Struct:
    s = _STRUCTS.get(fmt)
    if s is None:
        s = _STRUCTS[fmt] = struct.Struct(fmt)
    return s


class Reader:
    """Sequential little-endian reader over an immutable byte string."""

    __slots__ = ("buf", "pos", "end", "limits")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        self.buf = data if isinstance(data, bytes) else bytes(data)
        self.pos = pos
        self.end = len(self.buf) if end is None else end
        self.limits = limits

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def need(self, n: int, what: str = "bytes") -> None:
        if n < 0:
            raise CountError(f"negative size {n}", offset=self.pos)
        if n > self.end - self.pos:
            raise TruncatedError(f"input ends: {what} need {n} bytes, {self.end - self.pos} left",
                                 offset=self.pos, expected=n, found=self.end - self.pos)

    def read(self, n: int) -> bytes:
        self.need(n)
        p = self.pos
        self.pos = p + n
        return self.buf[p:p + n]

    def unpack(self, st: struct.Struct) -> tuple:
        p = self.pos
        if st.size > self.end - p:
            raise TruncatedError(f"input ends: need {st.size} bytes, {self.end - p} left",
                                 offset=p, expected=st.size, found=self.end - p)
        self.pos = p + st.size
        return st.unpack_from(self.buf, p)

    def check_count(self, count: int, item_size: int, what: str = "array") -> None:
        """Refuse a count before allocating: negative, or more than the bytes left."""
        if count < 0:
            raise CountError(f"{what} count {count} is negative", offset=self.pos)
        if item_size > 0:
            if count * item_size > self.end - self.pos:
                raise CountError(
                    f"{what} of {count} x {item_size} bytes exceeds the {self.end - self.pos} bytes left",
                    offset=self.pos, expected=f"<= {(self.end - self.pos) // item_size} items",
                    found=count)
        elif count > (self.end - self.pos) + 65536:
            raise CountError(f"{what} count {count} of zero-size items is implausible",
                             offset=self.pos, found=count)
        if count > self.limits.max_elements:
            raise LimitError(f"{what} count {count} exceeds the limit of {self.limits.max_elements} "
                             f"elements (raise it with limits=Limits(max_elements=...) or "
                             f"--max-elements)", offset=self.pos, found=count)

    def array(self, dtype: np.dtype, count: int, what: str = "array") -> np.ndarray:
        """``count`` items of ``dtype`` as a writable numpy array."""
        self.check_count(count, dtype.itemsize, what)
        p = self.pos
        n = count * dtype.itemsize
        self.pos = p + n
        return np.frombuffer(self.buf, dtype=dtype, count=count, offset=p).copy()

    def tail(self) -> bytes:
        p = self.pos
        self.pos = self.end
        return self.buf[p:self.end]


class Writer:
    """Collects chunks; ``getvalue`` joins them once."""

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def write(self, b: bytes) -> None:
        self.parts.append(b)
        self.size += len(b)

    def pack(self, st: struct.Struct, *values: Any) -> None:
        b = st.pack(*values)
        self.parts.append(b)
        self.size += len(b)

    def getvalue(self) -> bytes:
        return b"".join(self.parts)
