"""Little-endian byte builders for the Knight Online fixtures the tests make
(N3 files are runs of int32/float32 fields and int32-counted strings)."""
from __future__ import annotations

import struct


def i32(*v: int) -> bytes:
    return struct.pack(f"<{len(v)}i", *v)


def u32(*v: int) -> bytes:
    return struct.pack(f"<{len(v)}I", *v)


def f32(*v: float) -> bytes:
    return struct.pack(f"<{len(v)}f", *v)


def s(b: bytes) -> bytes:
    """An N3 string: its length as int32, then its bytes."""
    return i32(len(b)) + b
