"""Value types that keep what plain Python values would lose.

* :class:`RawString` - bytes of a length-prefixed string, plus the raw stored
  length when it cannot be re-derived (a negative length such as ``-1``).
* :class:`F32NaN` - a float that is a NaN read from 4 bytes; it remembers the
  exact bit pattern (Python's float conversion would quiet signalling NaNs).
* :class:`F64NaN` - the same for 8-byte doubles.
"""
from __future__ import annotations

import struct

_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")
_F64 = struct.Struct("<d")
_U64 = struct.Struct("<Q")


class RawString(bytes):
    """String bytes with an optional raw stored length (``None`` = ``len``)."""

    #: set on an instance only when it differs (most strings never need their
    #: own attribute dictionary, which is most of the cost of creating one)
    raw_len: int | None = None

    def __new__(cls, data: bytes = b"", raw_len: int | None = None) -> "RawString":
        obj = bytes.__new__(cls, data)
        if raw_len is not None:
            obj.raw_len = raw_len
        return obj

    def stored_length(self) -> int:
        return len(self) if self.raw_len is None else self.raw_len

    def __repr__(self) -> str:
        if self.raw_len is None:
            return f"RawString({bytes(self)!r})"
        return f"RawString({bytes(self)!r}, raw_len={self.raw_len})"

    def __reduce__(self):
        return (RawString, (bytes(self), self.raw_len))


class F32NaN(float):
    """A NaN float that keeps its 32-bit pattern."""

    bits: int

    def __new__(cls, bits: int) -> "F32NaN":
        obj = super().__new__(cls, float("nan"))
        obj.bits = bits
        return obj

    def __repr__(self) -> str:
        return f"F32NaN(0x{self.bits:08X})"

    def __reduce__(self):
        return (F32NaN, (self.bits,))


class F64NaN(float):
    """A NaN double that keeps its 64-bit pattern."""

    bits: int

    def __new__(cls, bits: int) -> "F64NaN":
        obj = super().__new__(cls, float("nan"))
        obj.bits = bits
        return obj

    def __repr__(self) -> str:
        return f"F64NaN(0x{self.bits:016X})"

    def __reduce__(self):
        return (F64NaN, (self.bits,))


def f32_from_bits(bits: int) -> float:
    """The document value for a u32 bit pattern (NaNs keep their bits)."""
    if (bits & 0x7F800000) == 0x7F800000 and (bits & 0x007FFFFF):
        return F32NaN(bits)
    return _F32.unpack(_U32.pack(bits & 0xFFFFFFFF))[0]


def f32_to_bits(value: float) -> int:
    if isinstance(value, F32NaN):
        return value.bits
    return _U32.unpack(_F32.pack(value))[0]


def f64_from_bits(bits: int) -> float:
    if (bits & 0x7FF0000000000000) == 0x7FF0000000000000 and (bits & 0x000FFFFFFFFFFFFF):
        return F64NaN(bits)
    return _F64.unpack(_U64.pack(bits & 0xFFFFFFFFFFFFFFFF))[0]


def f64_to_bits(value: float) -> int:
    if isinstance(value, F64NaN):
        return value.bits
    return _U64.unpack(_F64.pack(value))[0]
