"""Fixtures for the texture tests, built here (never copied from the corpus).

``ntf_bytes`` writes an NTF record with ``struct`` directly, independently of
the codec's encoder, so tests compare the codec against bytes laid out by
hand from the format note.  ``dds_wrap`` builds a DDS header so Pillow's own
DDS reader can decode a block payload as an independent reference.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from corpus_paths import CORPUS_ROOT

DXT1 = 0x31545844
DXT3 = 0x33545844
DXT5 = 0x35545844
A8R8G8B8 = 21
A4R4G4B4 = 26

def corpus_root() -> Path:
    """The KO corpus folder (tests skip when it is absent)."""
    # tests/textures/x.py -> parents[1] = tests, .parent = repo; shared/ sits beside the repo
    return CORPUS_ROOT / "ko"


def pattern(n: int, seed: int) -> bytes:
    """Deterministic pseudo-random bytes."""
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def ntf_bytes(name: bytes, version: int, width: int, height: int, fmt: int, mipmap: int,
              payload: bytes, name_len: int | None = None) -> bytes:
    """An NTF record: i32 name length + name, 'NTF' + version, 4 x 32-bit, payload."""
    n = len(name) if name_len is None else name_len
    return (struct.pack("<i", n) + name + b"NTF" + bytes([version])
            + struct.pack("<iiIi", width, height, fmt, mipmap) + payload)


def dds_wrap(fourcc: bytes, width: int, height: int, payload: bytes) -> bytes:
    """A minimal DDS file (one level, FourCC pixel format) around ``payload``."""
    flags = 0x1 | 0x2 | 0x4 | 0x1000 | 0x80000  # caps height width pixelformat linearsize
    header = struct.pack("<4sIIIIIII44s", b"DDS ", 124, flags, height, width, len(payload), 0, 0,
                         b"\0" * 44)
    pixel_format = struct.pack("<II4sIIIII", 32, 0x4, fourcc, 0, 0, 0, 0, 0)
    caps = struct.pack("<IIIII", 0x1000, 0, 0, 0, 0)
    return header + pixel_format + caps + payload
