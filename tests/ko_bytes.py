"""Little-endian byte builders for the Knight Online fixtures the tests make
(N3 files are runs of int32/float32 fields and int32-counted strings), written
with struct alone so that they stay independent of the layout engine they test."""
from __future__ import annotations

import struct


def i32(*v: int) -> bytes:
    return struct.pack(f"<{len(v)}i", *v)


def u32(*v: int) -> bytes:
    return struct.pack(f"<{len(v)}I", *v)


def f32(*v: float) -> bytes:
    return struct.pack(f"<{len(v)}f", *v)


def i16(*v: int) -> bytes:
    return struct.pack(f"<{len(v)}h", *v)


def u16(*v: int) -> bytes:
    return struct.pack(f"<{len(v)}H", *v)


def u8(*v: int) -> bytes:
    return bytes(v)


def s(b: bytes) -> bytes:
    """An N3 string: its length as int32, then its bytes."""
    return i32(len(b)) + b
