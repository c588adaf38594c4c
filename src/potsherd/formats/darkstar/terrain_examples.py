"""Small terrain and mission files packed field by field the way the engine
writes them (grdFile.cpp, grdBlock.cpp), for tests and fuzz seeds.  They do not
use the codecs, so a codec reading them back is checked against an
independent writer."""
from __future__ import annotations

import struct

import numpy as np

from . import lzh

P = struct.pack


def example_heights(n: int) -> np.ndarray:
    y, x = np.mgrid[0:n + 1, 0:n + 1]
    return (10 + 3 * np.sin(x / 2.0) + 2 * y).astype("<f4")


def example_materials(n: int) -> tuple[np.ndarray, np.ndarray]:
    y, x = np.mgrid[0:n, 0:n]
    flags = ((x + y) % 8).astype("u1")
    flags[0, 0] |= 1 << 3          # one empty square (empty level 1)
    index = ((x * 3 + y) % 5).astype("u1")
    return flags, index


def example_light(n: int, scale: int = 0) -> np.ndarray:
    w = (n << scale) + 1
    y, x = np.mgrid[0:w, 0:w]
    return (0xF000 | (x * 97 + y * 31) % 0x1000).astype("<u2")


def _frame(tag: bytes, version: int, payload: bytes) -> bytes:
    body = P("<i", version) + payload
    return tag + P("<I", len(body)) + body + bytes(len(body) & 1)


def _lzh_block(raw: bytes) -> bytes:
    return P("<i", len(raw)) + lzh.encode(raw)


def gblk_bytes(version: int = 5, n: int = 8, light_scale: int = 0, name: bytes = b"block-0",
               heights: np.ndarray | None = None) -> bytes:
    """A ``.dtb`` of ``n`` x ``n`` squares at any version 0-5."""
    h = example_heights(n) if heights is None else np.asarray(heights, "<f4")
    flags, index = example_materials(n)
    mats = np.stack([flags, index], axis=-1).tobytes()
    light = example_light(n, light_scale) if light_scale != -1 else None
    out = name.ljust(16, b"\0") + P("<ii", n.bit_length(), light_scale)
    out += P("<2f", float(h.min()), float(h.max())) + P("<2i", n, n)
    if version == 0:
        out += h.tobytes()
    elif version < 4:
        # row-delta coding: scale 0.5, deltas chosen so the rows reconstruct exactly
        out += h[0].tobytes()
        for y in range(1, n):
            out += P("<ff", 0.5, float(h[y, 0]))
            out += bytes((x % 5 - 2) & 0xFF for x in range(1, n))
            out += P("<f", float(h[y, n]))
        out += h[n].tobytes()
    else:
        out += _lzh_block(h.tobytes())
    out += mats if version < 4 else _lzh_block(mats)
    if version >= 2:
        for i in range(11):
            m = bytes([0x81, i]) if i < 2 else b""
            out += P("<H", len(m)) + m
    if light is not None:
        out += light.tobytes() if version < 4 else _lzh_block(light.tobytes())
    if version > 4:
        out += P("<i", 3) + b"\x01\x02\x03"
    if version >= 3:
        out += P("<5i", 3, 1, 2, 3, 1)
        out += P("<hhBBBBI", 1, 2, 0, 5, 1, 2, 0)      # one 12-byte hires record
        out += P("<2H", 0x1234, 0x5678) + bytes([7, 8, 9]) + P("<I", 0xDEADBEEF)
    return _frame(b"GBLK", version, out)


def gfil_bytes(version: int = 1, dml: str = "mars.dml", blocks: int = 1,
               grid: tuple[int, int] = (3, 3)) -> bytes:
    """A ``.dtf`` naming ``blocks`` blocks on a ``grid`` of block ids."""
    name = dml.encode("latin-1")
    out = P("<i", len(name)) + name + P("<3i", blocks, 9, 3)
    out += P("<6f", 0, 0, 0, 256, 256, 100) + P("<2i", 0, 0) + P("<2f", 1.0, 99.0)
    out += P("<2i", *grid)
    if version == 1:
        out += P("<i", 0)
    out += np.zeros(grid[0] * grid[1], "<i4").tobytes()
    out += P("<i", blocks)
    for i in range(blocks):
        nm = f"b{i}".encode() if i else b""
        out += P("<ii", i, len(nm)) + nm
    return _frame(b"GFIL", version, out)


MISSION_TEXT = (
    b'// example mission\r\n'
    b'$missionName = "Example";\r\n\r\n'
    b'instant SimGroup "MissionGroup" {\r\n'
    b'\tinstant SimVolume "Volume" {\r\n\t\tfileName = "example.vol";\r\n\t};\r\n'
    b'\tinstant SimTerrain "Terrain" {\r\n\t\ttedFileName = "example.ted";\r\n'
    b'\t\tvisibleDistance = "450";\r\n\t\tposition = "-3072 -3072 0";\r\n\t};\r\n'
    b'\tinstant InteriorShape "tower" {\r\n\t\tposition = "10 20 30";\r\n'
    b'\t\trotation = "0 0 1.5708";\r\n\t\tfileName = "cube.dis";\r\n\t};\r\n'
    b'\tinstant StaticShape "gen" {\r\n\t\tdataBlock = "Generator";\r\n'
    b'\t\tposition = "1 2 3";\r\n\t\trotation = "0 -0 0";\r\n\t\tdestroyable = "True";\r\n\t};\r\n'
    b'\tinstant Marker "DropPoint1" {\r\n\t\tdataBlock = "DropPointMarker";\r\n'
    b'\t\tposition = "5 5 50";\r\n\t\trotation = "0 0 0";\r\n\t};\r\n'
    b'};\r\n//--- end of export ---\r\n'
)
