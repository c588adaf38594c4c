"""Baseline: hand-written decoders using only ``struct`` and ``numpy.frombuffer``.

The practical speed limit for Python: each function knows its record by
heart (no interpretation, no expression evaluation), reads runs of scalars
with one precompiled ``Struct`` call and arrays with ``frombuffer``.  They
build the same document as the layout engine (same dict keys in the same
order, ``RawString`` strings, writable numpy arrays, structured arrays for
tables, ragged tables for skin bindings, list-of-dict record arrays) so the comparison measures decoding, not a cheaper document.  They
check bounds only as far as ``struct``/``numpy`` do, and do not keep NaN bit
patterns: they are a lower bound, not a replacement.
"""
from __future__ import annotations

import struct

import numpy as np

from potsherd.core.layout import Ragged
from potsherd.core.values import RawString

_I32 = struct.Struct("<i").unpack_from
_I16 = struct.Struct("<h").unpack_from
_U32 = struct.Struct("<I").unpack_from
_F32 = struct.Struct("<f").unpack_from
_3I = struct.Struct("<3i").unpack_from
_6I = struct.Struct("<6i").unpack_from
_4I = struct.Struct("<4i").unpack_from
_COUNT = struct.Struct("<i").unpack_from
#: the layout's fixed-record tables (one structured array each)
_COLLAPSE = np.dtype([("indicesToLose", "<i4"), ("indicesToChange", "<i4"),
                      ("verticesToLose", "<i4"), ("indexChangesOffset", "<i4"),
                      ("collapseTo", "<i4"), ("shouldCollapse", "u1"), ("padding", "V3")])
_LOD = np.dtype([("distance", "<f4"), ("vertexCount", "<i4")])
_RECT2_U2 = struct.Struct("<8i2I").unpack_from
_F4 = np.dtype("<f4")
_U2 = np.dtype("<u2")
_I4 = np.dtype("<i4")


def _string(buf: bytes, pos: int) -> tuple[RawString, int]:
    n, = _I32(buf, pos)
    pos += 4
    if n <= 0:
        return RawString(b"", n if n < 0 else None), pos
    if n > len(buf) - pos:
        raise ValueError("string runs past the end")
    return RawString(buf[pos:pos + n]), pos + n


def _floats(buf: bytes, n: int, pos: int) -> tuple[np.ndarray, int]:
    n = max(n, 0)
    return np.frombuffer(buf, _F4, n, pos).copy(), pos + 4 * n


def decode_n3pmesh(buf: bytes) -> dict:
    name, pos = _string(buf, 0)
    cc, chc, vc, ic, mvc, mic = _6I(buf, pos)
    pos += 24
    vertices, pos = _floats(buf, vc * 8, pos)
    ni = max(ic, 0)
    indices = np.frombuffer(buf, _U2, ni, pos).copy()
    pos += 2 * ni
    ncol = max(cc, 0)
    collapses = np.frombuffer(buf, _COLLAPSE, ncol, pos).copy()
    pos += 24 * ncol
    nch = max(chc, 0)
    changes = np.frombuffer(buf, _I4, nch, pos).copy()
    pos += 4 * nch
    lod_count, = _I32(buf, pos)
    pos += 4
    nl = max(lod_count, 0)
    lods = np.frombuffer(buf, _LOD, nl, pos).copy()
    pos += 8 * nl
    if pos != len(buf):
        raise ValueError("n3pmesh does not end at the end of the file")
    return {"name": name, "collapseCount": cc, "changeCount": chc, "vertexCount": vc,
            "indexCount": ic, "minVertexCount": mvc, "minIndexCount": mic,
            "vertices": vertices, "indices": indices, "collapses": collapses,
            "indexChanges": changes, "lodCount": lod_count, "lods": lods}


_COLLAPSE_DT = np.dtype([("indicesToLose", "<i4"), ("indicesToChange", "<i4"), ("verticesToLose", "<i4"),
                         ("indexChangesOffset", "<i4"), ("collapseTo", "<i4"), ("shouldCollapse", "u1"),
                         ("padding", "V3")])
_LOD_DT = np.dtype([("distance", "<f4"), ("vertexCount", "<i4")])


def decode_n3pmesh_views(buf: bytes) -> dict:
    """The performance issue's reference for ``.n3pmesh``: numpy views of the
    input (no copies), collapses and LODs as structured arrays, the scalars by
    one ``struct`` call.  The same values as the engine's document (the tables
    have the layout's packed dtypes), read-only."""
    name, pos = _string(buf, 0)
    cc, chc, vc, ic, mvc, mic = _6I(buf, pos)
    pos += 24
    nv, ni, ncol, nch = max(vc, 0) * 8, max(ic, 0), max(cc, 0), max(chc, 0)
    vertices = np.frombuffer(buf, _F4, nv, pos)
    pos += 4 * nv
    indices = np.frombuffer(buf, _U2, ni, pos)
    pos += 2 * ni
    collapses = np.frombuffer(buf, _COLLAPSE_DT, ncol, pos)
    pos += 24 * ncol
    changes = np.frombuffer(buf, _I4, nch, pos)
    pos += 4 * nch
    lod_count, = _I32(buf, pos)
    nl = max(lod_count, 0)
    lods = np.frombuffer(buf, _LOD_DT, nl, pos + 4)
    if pos + 4 + 8 * nl != len(buf):
        raise ValueError("n3pmesh does not end at the end of the file")
    return {"name": name, "collapseCount": cc, "changeCount": chc, "vertexCount": vc,
            "indexCount": ic, "minVertexCount": mvc, "minIndexCount": mic,
            "vertices": vertices, "indices": indices, "collapses": collapses,
            "indexChanges": changes, "lodCount": lod_count, "lods": lods}


def _skin(buf: bytes, pos: int) -> tuple[dict, int]:
    name, pos = _string(buf, pos)
    fc, vc, uc = _3I(buf, pos)
    pos += 12
    rec = {"name": name, "faceCount": fc, "vertexCount": vc, "uvCount": uc}
    if fc > 0 and vc > 0:
        rec["positionNormals"], pos = _floats(buf, vc * 6, pos)
        rec["vertexIndices"] = np.frombuffer(buf, _U2, fc * 3, pos).copy()
        pos += 6 * fc
        if uc > 0:
            rec["uvs"], pos = _floats(buf, uc * 2, pos)
            rec["uvIndices"] = np.frombuffer(buf, _U2, fc * 3, pos).copy()
            pos += 6 * fc
        rec["bindings"], pos = _bindings(buf, pos, vc)
    return rec, pos


_BIND_ROW = np.dtype([("origin", "<f4", (3,)), ("count", "<i4"), ("pointerPlaceholders", "V8")])
_BINDINGS = None


def _bindings(buf: bytes, pos: int, vc: int):
    """The layout's ragged table: one pass for where each binding starts and
    how many joints it has, then every column gathered with numpy."""
    global _BINDINGS
    if _BINDINGS is None:
        from potsherd.formats.ko.codecs import LAYOUT
        _BINDINGS = next(f.storage for f in LAYOUT.records["n3cskin"].fields if f.name == "bindings")
    starts = [0] * vc
    counts = [0] * vc
    for i in range(vc):
        count, = _COUNT(buf, pos + 12)
        n = count if count > 0 else 0
        starts[i] = pos
        counts[i] = n
        pos += 24 + (8 * n if n > 1 else 4 * n)
    u8 = np.frombuffer(buf, np.uint8)
    st = np.array(starts, np.int64)
    c = np.array(counts, np.int64)
    rows = u8[st[:, None] + np.arange(24)].view(_BIND_ROW).reshape(vc)
    joints = u8[_values(st + 24, c)].view(_I4).reshape(-1)
    many = c > 1
    weights = u8[_values(st[many] + 24 + 4 * c[many], c[many])].view(_F4).reshape(-1)
    return Ragged(rows, {"joints": joints, "weights": weights}, _BINDINGS), pos


def _values(first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Byte index of ``counts[i]`` 4-byte values from ``first[i]``."""
    total = int(counts.sum())
    before = np.cumsum(counts) - counts
    starts = np.repeat(first - before * 4, counts) + np.arange(total, dtype=np.int64) * 4
    return starts[:, None] + np.arange(4)


def decode_n3cskins(buf: bytes) -> dict:
    name, pos = _string(buf, 0)
    lods = []
    for _ in range(4):
        skin, pos = _skin(buf, pos)
        lods.append(skin)
    if pos != len(buf):
        raise ValueError("n3cskins does not end at the end of the file")
    return {"name": name, "lods": lods}


def _uif_node(buf: bytes, pos: int, typ: int, depth: int = 0) -> tuple[dict, int]:
    # fileVersion 1264 (the default): i16 child count + i16 version word
    if depth > 256:
        raise ValueError("too deep")
    name, pos = _string(buf, pos)
    child_count, = _I16(buf, pos)
    version_word, = _I16(buf, pos + 2)
    pos += 4
    node = {"name": name, "childCount": child_count, "versionWord": version_word}
    children = []
    for _ in range(max(child_count, 0)):
        t, = _U32(buf, pos)
        child, pos = _uif_node(buf, pos + 4, t, depth + 1)
        children.append({"type": t, "node": child})
    node["children"] = children
    node["id"], pos = _string(buf, pos)
    r = _RECT2_U2(buf, pos)
    pos += 40
    node["region"] = list(r[0:4])
    node["movable"] = list(r[4:8])
    node["style"] = r[8]
    node["reserved"] = r[9]
    node["tooltip"], pos = _string(buf, pos)
    node["soundOpen"], pos = _string(buf, pos)
    node["soundClose"], pos = _string(buf, pos)
    if version_word > 1:
        node["baseExtra"], = _I16(buf, pos)
        pos += 2
    t = typ & 0xFFFF
    if t == 1:
        node["clickRect"] = list(_4I(buf, pos))
        pos += 16
        node["soundOn"], pos = _string(buf, pos)
    if t == 1 or t == 2 or t == 8:
        node["soundClick"], pos = _string(buf, pos)
    if t == 4:
        node["texture"], pos = _string(buf, pos)
        node["uv"], pos = _floats(buf, 4, pos)
        node["animationFrame"], = _F32(buf, pos)
        pos += 4
    if t == 6 or t == 14:
        font, pos = _string(buf, pos)
        node["fontName"] = font
        if len(font):
            node["fontHeight"], = _U32(buf, pos)
            pos += 4
            if t == 6:
                node["fontFlags"], = _U32(buf, pos)
                pos += 4
            if t == 14:
                node["fontColor"], node["fontBold"], node["fontItalic"] = struct.unpack_from("<3I", buf, pos)
                pos += 12
    if t == 6:
        node["color"], = _U32(buf, pos)
        pos += 4
        node["text"], pos = _string(buf, pos)
        if version_word > 0:
            node["lineSpacing"], = _I32(buf, pos)
            pos += 4
    if t == 8:
        node["soundTyping"], pos = _string(buf, pos)
    if t == 9:
        node["areaType"], = _I32(buf, pos)
        pos += 4
    return node, pos


def decode_uif(buf: bytes) -> dict:
    node, pos = _uif_node(buf, 0, 0)
    if pos != len(buf):
        raise ValueError("uif does not end at the end of the file")
    return {"root": node}


DECODERS = {"n3pmesh": decode_n3pmesh, "n3cskins": decode_n3cskins, "uif": decode_uif}
#: references building views and structured arrays (not the engine's document shape)
VIEW_DECODERS = {"n3pmesh": decode_n3pmesh_views}
