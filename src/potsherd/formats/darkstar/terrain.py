"""Darkstar terrain: ``GFIL`` grid files (``.dtf``) and ``GBLK`` grid blocks
(``.dtb``), the two members of a Tribes ``.ted`` volume.

Both are tagged persistent blocks: a FOURCC, a u32 size word (bit 31 = dword
alignment, low bits = bytes after the word), the class version (i32), the
payload, any slack the engine would skip, and the pad to 2 (or 4) bytes.

Facts from the published engine source (grdFile.cpp, grdBlock.cpp, grdBlock.h):

* GFIL (version 0-1): material-list name (i32 length + chars), last block id,
  detail count, scale shift, bounds (6 f32), origin (2 i32), height range
  (2 f32), size in blocks (2 i32), block pattern (i32, version 1 only), the
  block-id map (size.x*size.y i32), then the block list (count, then id +
  name per block).
* GBLK (version 0-5): 16-byte name, detail count, light scale, height range,
  size in squares.  Heights ((size+1)^2 f32): plain in version 0, row-delta
  coded in 1-3 (first/last row plain; each middle row a f32 scale, a leading
  f32, size.x-1 signed byte deltas, a trailing f32), LZH from 4.  Materials
  (size^2 of flags u8 + index u8; flags: bits 0-2 rotate/flipX/flipY, bits 3-5
  empty level, 6 edit, 7 corner): plain before 4, LZH from 4.  Pin maps
  (version 2+): 11 of u16 size + bits.  Light map (u16 per texel, width
  (size << lightScale) + 1) unless lightScale is -1: plain before 4, LZH from
  4.  Version 5+: an already-compressed hires light map (i32 size + bytes).
  Version 3+: the hires light-map list (version word; a count when it is > 0;
  at version 3 the pool sizes, 12-byte records, u16 colour pool, u8 index
  table, u32 tree nodes).

An LZH map is kept as its decoded array plus the stored stream and the CRC of
what it decoded to: while the array is unchanged the stored stream is written
back; an edited array is compressed again with the engine's own encoder.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from ...core.errors import EncodeError, TruncatedError, ValueFormatError
from ...core.stream import Reader, Writer, cached_struct
from ...registry import Option
from . import lzh
from .tree import need_array, need_bytes, need_dict, need_int, need_list, need_tag
from .terrain_maps import block_heights, block_materials, light_map
from .treecodec import TreeCodec
from .volumes import VolumeCodec

_I32 = cached_struct("<i")
_U32 = cached_struct("<I")
_U16 = cached_struct("<H")
ALIGN_DWORD = 0x80000000
MAX_DETAIL = 10
#: most blocks or block-list entries a GFIL may declare (checked against bytes too)
MAX_NAME = 1 << 16


# ----------------------------------------------------------------------------
# tagged persistent block framing


def _read_frame(r: Reader, tag: bytes) -> tuple[dict, int]:
    """Header of a tagged block; returns the frame and where its payload ends."""
    got = r.read(4)
    if got != tag:
        raise ValueFormatError(f"expected a {tag.decode()} block", offset=r.pos - 4,
                               path="tag", found=got)
    word = r.unpack(_U32)[0]
    size = word & ~ALIGN_DWORD
    end = r.pos + size
    if end > r.end:
        raise TruncatedError(f"{tag.decode()} block of {size} bytes, {r.end - r.pos} left",
                             offset=4, path="sizeWord", found=size)
    if size < 4:
        raise ValueFormatError(f"{tag.decode()} block too small for its version", offset=4,
                               path="sizeWord", found=size)
    version = r.unpack(_I32)[0]
    return {"tag": tag.decode("latin-1"), "sizeWord": word, "version": version}, end


def _finish_frame(r: Reader, end: int, node: dict) -> None:
    """Slack before the block end and the pad after it (as much as is there)."""
    node["slack"] = r.read(end - r.pos)
    word = node["sizeWord"]
    align = 4 if word & ALIGN_DWORD else 2
    node["pad"] = r.read(min((-(word & ~ALIGN_DWORD)) % align, r.end - r.pos))


def _write_frame(w: Writer, root: dict, payload: bytes) -> None:
    body = _I32.pack(need_int(root["version"], "$.version", -(1 << 31), (1 << 31) - 1)) \
        + payload + need_bytes(root.get("slack", b""), "$.slack")
    word = need_int(root["sizeWord"], "$.sizeWord")
    pad = need_bytes(root.get("pad", b""), "$.pad")
    if word & ~ALIGN_DWORD != len(body):
        word = (word & ALIGN_DWORD) | len(body)
        pad = bytes((-len(body)) % (4 if word & ALIGN_DWORD else 2))
    w.write(need_tag(root["tag"], "$.tag"))
    w.pack(_U32, word)
    w.write(body)
    w.write(pad)


def _i32(r: Reader) -> int:
    return r.unpack(_I32)[0]


def _arr(r: Reader, dtype: str, shape: tuple[int, ...], what: str) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    return r.array(np.dtype(dtype), count, what).reshape(shape).copy()


def _string(r: Reader, what: str) -> str:
    n = _i32(r)
    if n < 0:
        raise ValueFormatError(f"negative {what} length {n}", offset=r.pos - 4, path=what,
                               found=n)
    if n > MAX_NAME:
        raise ValueFormatError(f"{what} of {n} characters", offset=r.pos - 4, path=what, found=n)
    return r.read(n).decode("latin-1")


def _put_string(w: Writer, s: Any, path: str) -> None:
    if not isinstance(s, str):
        raise EncodeError(f"expected a string, found {type(s).__name__}", path=path)
    b = s.encode("latin-1")
    w.pack(_I32, len(b))
    w.write(b)


# ----------------------------------------------------------------------------
# LZH maps


def _read_lzh_map(r: Reader, dtype: str, shape: tuple[int, ...] | None, what: str) -> dict:
    start = r.pos
    size = _i32(r)
    if size < 0:
        raise ValueFormatError(f"negative {what} size {size}", offset=start, path=what,
                               found=size)
    raw, used = lzh.decode(r.buf, size, r.pos, r.end, limits=r.limits, path=what)
    stream = r.read(used)
    item = np.dtype(dtype).itemsize
    if shape is not None and int(np.prod(shape)) * item == size:
        values = np.frombuffer(raw, dtype).reshape(shape).copy()
    else:
        values = np.frombuffer(raw, "u1").copy()
    return {"size": size, "values": values, "stream": stream, "crc": zlib.crc32(raw)}


def _write_lzh_map(w: Writer, node: Any, dtype: str, path: str) -> None:
    node = need_dict(node, path, ("values",))
    v = node["values"]
    if not isinstance(v, np.ndarray):
        raise EncodeError("expected an array", path=path + ".values")
    if v.dtype.str != "|u1":
        v = need_array(v, dtype, path + ".values")
    raw = np.ascontiguousarray(v).tobytes()
    stream = node.get("stream")
    if (isinstance(stream, (bytes, bytearray)) and node.get("crc") == zlib.crc32(raw)
            and node.get("size") == len(raw)):
        w.pack(_I32, len(raw))
        w.write(bytes(stream))
        return
    w.pack(_I32, len(raw))
    w.write(lzh.encode(raw))


def _read_materials(r: Reader, n: int) -> dict:
    t = _arr(r, "u1", (n, n, 2), "materials")
    return {"flags": t[..., 0].copy(), "index": t[..., 1].copy()}


def _materials_bytes(m: Any, path: str) -> bytes:
    m = need_dict(m, path, ("flags", "index"))
    f = need_array(m["flags"], "|u1", path + ".flags")
    i = need_array(m["index"], "|u1", path + ".index", f.shape)
    return np.stack([f, i], axis=-1).tobytes()


# ----------------------------------------------------------------------------
# GBLK


class GridBlockCodec(TreeCodec):
    """``.dtb``: one terrain block (versions 0-5)."""

    def decode_tree(self, r: Reader, warnings: list[str]) -> Any:
        root, end = _read_frame(r, b"GBLK")
        blk = Reader(r.buf, r.pos, end, r.limits)
        ver = root["version"]
        if not 0 <= ver <= 5:
            raise ValueFormatError(f"GBLK version {ver} is not one potsherd knows (0-5)",
                                   offset=8, path="version", found=ver)
        root["nameId"] = blk.read(16)
        root["detailCount"] = _i32(blk)
        root["lightScale"] = _i32(blk)
        root["heightRange"] = _arr(blk, "<f4", (2,), "heightRange")
        size = _arr(blk, "<i4", (2,), "size")
        root["size"] = size
        sx, sy = int(size[0]), int(size[1])
        if not (0 < sx <= 4096 and sx == sy and sx & (sx - 1) == 0):
            raise ValueFormatError(f"block size {sx}x{sy} is not a square power of two",
                                   offset=blk.pos - 8, path="size", found=f"{sx}x{sy}")
        hw = sx + 1
        if ver == 0:
            root["heights"] = _arr(blk, "<f4", (hw, hw), "heights")
        elif ver < 4:
            rows: dict[str, Any] = {"top": _arr(blk, "<f4", (hw,), "heights.top")}
            blk.check_count(sy - 1, 4 + 4 + (sx - 1) + 4, "heights.rows")
            mid = _arr(blk, "u1", (sy - 1, 12 + sx - 1), "heights.rows")
            rows["scale"] = mid[:, 0:4].copy().view("<f4").reshape(-1)
            rows["lead"] = mid[:, 4:8].copy().view("<f4").reshape(-1)
            rows["deltas"] = mid[:, 8:8 + sx - 1].copy().view("i1")
            rows["trail"] = mid[:, 8 + sx - 1:].copy().view("<f4").reshape(-1)
            rows["bottom"] = _arr(blk, "<f4", (hw,), "heights.bottom")
            root["heightRows"] = rows
        else:
            root["heights"] = _read_lzh_map(blk, "<f4", (hw, hw), "heights")
        if ver < 4:
            root["materials"] = _read_materials(blk, sx)
        else:
            m = _read_lzh_map(blk, "u1", (sx, sx, 2), "materials")
            v = m.pop("values")
            if v.ndim == 3:
                m["flags"], m["index"] = v[..., 0].copy(), v[..., 1].copy()
            else:
                m["bytes"] = v
            root["materials"] = m
        if ver >= 2:
            pins = []
            for i in range(MAX_DETAIL + 1):
                n = blk.unpack(_U16)[0]
                pins.append(_arr(blk, "u1", (n,), f"pinMaps[{i}]"))
            root["pinMaps"] = pins
        if root["lightScale"] != -1:
            ls = root["lightScale"]
            if not 0 <= ls <= 16:       # the width is (size << lightScale) + 1
                raise ValueFormatError(f"light scale {ls} outside -1..16", offset=0x20,
                                       path="lightScale", found=ls)
            lw = (sx << ls) + 1
            if ver < 4:
                blk.check_count(lw * lw, 2, "lightMap")
                root["lightMap"] = _arr(blk, "<u2", (lw, lw), "lightMap")
            else:
                root["lightMap"] = _read_lzh_map(blk, "<u2", (lw, lw), "lightMap")
        if ver > 4:
            n = _i32(blk)
            if n < 0:
                raise ValueFormatError(f"negative hires light map size {n}", offset=blk.pos - 4,
                                       path="hiresLightMap", found=n)
            root["hiresLightMap"] = blk.read(n)
        if ver >= 3:
            hr: dict[str, Any] = {"version": _i32(blk)}
            if hr["version"] > 0:
                hr["count"] = _i32(blk)
            if hr["version"] == 3:
                count = hr["count"]
                sizes = [_i32(blk) for _ in range(3)]
                hr["colorPoolSize"], hr["indexTableSize"], hr["treeTableSize"] = sizes
                if count < 0 or min(sizes) < 0:
                    raise ValueFormatError("negative hires light-map count", offset=blk.pos,
                                           path="hires", found=count)
                hr["maps"] = _arr(blk, "u1", (count, 12), "hires.maps")
                hr["colorPool"] = _arr(blk, "<u2", (sizes[0],), "hires.colorPool")
                hr["indexTable"] = _arr(blk, "u1", (sizes[1],), "hires.indexTable")
                hr["treeTable"] = _arr(blk, "<u4", (sizes[2],), "hires.treeTable")
            root["hires"] = hr
        r.pos = blk.pos
        _finish_frame(r, end, root)
        return root

    def encode_tree(self, root: Any) -> bytes:
        root = need_dict(root, "$", ("tag", "sizeWord", "version", "nameId", "detailCount",
                                      "lightScale", "heightRange", "size", "materials"))
        ver = need_int(root["version"], "$.version", 0, 5)
        w = Writer()
        w.write(need_bytes(root["nameId"], "$.nameId", 16))
        w.pack(_I32, need_int(root["detailCount"], "$.detailCount", -(1 << 31), (1 << 31) - 1))
        ls = need_int(root["lightScale"], "$.lightScale", -(1 << 31), (1 << 31) - 1)
        w.pack(_I32, ls)
        w.write(need_array(root["heightRange"], "<f4", "$.heightRange", (2,)).tobytes())
        size = need_array(root["size"], "<i4", "$.size", (2,))
        w.write(size.tobytes())
        sx = int(size[0])
        hw = sx + 1
        if ver == 0:
            w.write(need_array(root["heights"], "<f4", "$.heights", (hw, hw)).tobytes())
        elif ver < 4:
            rows = need_dict(root["heightRows"], "$.heightRows",
                             ("top", "scale", "lead", "deltas", "trail", "bottom"))
            w.write(need_array(rows["top"], "<f4", "$.heightRows.top", (hw,)).tobytes())
            scale = need_array(rows["scale"], "<f4", "$.heightRows.scale")
            n = len(scale)
            lead = need_array(rows["lead"], "<f4", "$.heightRows.lead", (n,))
            trail = need_array(rows["trail"], "<f4", "$.heightRows.trail", (n,))
            deltas = rows["deltas"]
            if not isinstance(deltas, np.ndarray) or deltas.shape != (n, sx - 1):
                raise EncodeError("deltas must be rows x (size-1)", path="$.heightRows.deltas")
            mid = np.concatenate([scale.view("u1").reshape(n, 4), lead.view("u1").reshape(n, 4),
                                  deltas.astype("i1").view("u1"),
                                  trail.view("u1").reshape(n, 4)], axis=1)
            w.write(mid.tobytes())
            w.write(need_array(rows["bottom"], "<f4", "$.heightRows.bottom", (hw,)).tobytes())
        else:
            _write_lzh_map(w, root["heights"], "<f4", "$.heights")
        mats = need_dict(root["materials"], "$.materials")
        if ver < 4:
            w.write(_materials_bytes(mats, "$.materials"))
        else:
            if "bytes" in mats:
                vals = need_array(mats["bytes"], "|u1", "$.materials.bytes")
            else:
                vals = np.frombuffer(_materials_bytes(mats, "$.materials"), "u1")
            _write_lzh_map(w, dict(mats, values=vals), "|u1", "$.materials")
        if ver >= 2:
            pins = need_list(root["pinMaps"], "$.pinMaps")
            for i, p in enumerate(pins):
                b = need_array(p, "|u1", f"$.pinMaps[{i}]").tobytes()
                if len(b) > 0xFFFF:
                    raise EncodeError("pin map over 65535 bytes", path=f"$.pinMaps[{i}]")
                w.pack(_U16, len(b))
                w.write(b)
        if ls != -1:
            if ver < 4:
                w.write(need_array(root["lightMap"], "<u2", "$.lightMap").tobytes())
            else:
                _write_lzh_map(w, root["lightMap"], "<u2", "$.lightMap")
        if ver > 4:
            b = need_bytes(root["hiresLightMap"], "$.hiresLightMap")
            w.pack(_I32, len(b))
            w.write(b)
        if ver >= 3:
            hr = need_dict(root["hires"], "$.hires", ("version",))
            hv = need_int(hr["version"], "$.hires.version", -(1 << 31), (1 << 31) - 1)
            w.pack(_I32, hv)
            if hv > 0:
                w.pack(_I32, need_int(hr["count"], "$.hires.count", -(1 << 31), (1 << 31) - 1))
            if hv == 3:
                maps = need_array(hr["maps"], "|u1", "$.hires.maps")
                pool = need_array(hr["colorPool"], "<u2", "$.hires.colorPool")
                index = need_array(hr["indexTable"], "|u1", "$.hires.indexTable")
                treet = need_array(hr["treeTable"], "<u4", "$.hires.treeTable")
                for n in (len(pool), len(index), len(treet)):
                    w.pack(_I32, n)
                for a in (maps, pool, index, treet):
                    w.write(a.tobytes())
        out = Writer()
        _write_frame(out, root, w.getvalue())
        return out.getvalue()

    def info(self, doc) -> dict:
        root = doc.root
        h = block_heights(root)
        mats = block_materials(root)
        return {"format": self.name, "family": self.family, "version": root["version"],
                "name": root["nameId"].split(b"\0")[0].decode("latin-1"),
                "size": [int(x) for x in root["size"]],
                "heightRange": [float(h.min()), float(h.max())],
                "emptySquares": int(np.count_nonzero(mats[0] & 0x38)) if mats else None,
                "lightMap": None if light_map(root) is None else list(light_map(root).shape)}

    def to_scene(self, doc, **options: Any):
        from .terrain_scene import to_scene
        return to_scene(doc, **options)

    def from_scene(self, scene: Any, *, like=None, out_name: str = "", out_dir: str = "",
                   **options: Any):
        """glTF grid -> ``.dtb`` (heights only; ``--like`` gives the rest)."""
        from .terrain_heightmap import block_from_scene
        return block_from_scene(scene, like)


# ----------------------------------------------------------------------------
# GFIL


class GridFileCodec(TreeCodec):
    """``.dtf``: the terrain's grid of blocks (versions 0-1)."""

    def decode_tree(self, r: Reader, warnings: list[str]) -> Any:
        root, end = _read_frame(r, b"GFIL")
        f = Reader(r.buf, r.pos, end, r.limits)
        ver = root["version"]
        root["materialList"] = _string(f, "materialList")
        root["lastBlockId"] = _i32(f)
        root["detailCount"] = _i32(f)
        root["scale"] = _i32(f)
        root["bounds"] = _arr(f, "<f4", (6,), "bounds")
        root["origin"] = _arr(f, "<i4", (2,), "origin")
        root["heightRange"] = _arr(f, "<f4", (2,), "heightRange")
        size = _arr(f, "<i4", (2,), "size")
        root["size"] = size
        if ver == 1:
            root["blockPattern"] = _i32(f)
        sx, sy = int(size[0]), int(size[1])
        if sx < 0 or sy < 0:
            raise ValueFormatError(f"negative grid size {sx}x{sy}", offset=f.pos - 8,
                                   path="size", found=f"{sx}x{sy}")
        f.check_count(sx * sy, 4, "blockMap")
        root["blockMap"] = _arr(f, "<i4", (sy, sx), "blockMap")
        n = _i32(f)
        if n < 0:
            raise ValueFormatError(f"negative block count {n}", offset=f.pos - 4,
                                   path="blocks", found=n)
        f.check_count(n, 8, "blocks")
        blocks = []
        for i in range(n):
            bid = _i32(f)
            blocks.append({"id": bid, "name": _string(f, f"blocks[{i}].name")})
        root["blocks"] = blocks
        r.pos = f.pos
        _finish_frame(r, end, root)
        return root

    def encode_tree(self, root: Any) -> bytes:
        root = need_dict(root, "$", ("tag", "sizeWord", "version", "materialList", "size",
                                      "blockMap", "blocks"))
        ver = need_int(root["version"], "$.version", -(1 << 31), (1 << 31) - 1)
        w = Writer()
        _put_string(w, root["materialList"], "$.materialList")
        for k in ("lastBlockId", "detailCount", "scale"):
            w.pack(_I32, need_int(root[k], f"$.{k}", -(1 << 31), (1 << 31) - 1))
        w.write(need_array(root["bounds"], "<f4", "$.bounds", (6,)).tobytes())
        w.write(need_array(root["origin"], "<i4", "$.origin", (2,)).tobytes())
        w.write(need_array(root["heightRange"], "<f4", "$.heightRange", (2,)).tobytes())
        size = need_array(root["size"], "<i4", "$.size", (2,))
        w.write(size.tobytes())
        if ver == 1:
            w.pack(_I32, need_int(root["blockPattern"], "$.blockPattern", -(1 << 31),
                                  (1 << 31) - 1))
        w.write(need_array(root["blockMap"], "<i4", "$.blockMap",
                           (int(size[1]), int(size[0]))).tobytes())
        blocks = need_list(root["blocks"], "$.blocks")
        w.pack(_I32, len(blocks))
        for i, b in enumerate(blocks):
            b = need_dict(b, f"$.blocks[{i}]", ("id", "name"))
            w.pack(_I32, need_int(b["id"], f"$.blocks[{i}].id", -(1 << 31), (1 << 31) - 1))
            _put_string(w, b["name"], f"$.blocks[{i}].name")
        out = Writer()
        _write_frame(out, root, w.getvalue())
        return out.getvalue()

    def info(self, doc) -> dict:
        root = doc.root
        return {"format": self.name, "family": self.family, "version": root["version"],
                "materialList": root["materialList"],
                "size": [int(x) for x in root["size"]],
                "detailCount": root["detailCount"], "scale": root["scale"],
                "blockPattern": root.get("blockPattern"),
                "blocks": [b["name"] or b["id"] for b in root["blocks"]]}


TERRAIN_OPTIONS = (
    Option("palette", str, "palette for the terrain tiles (.ppl/.pal; default: the first in "
                           "the material list's tree)", ""),
    Option("data_root", str, "game data folder (or volumes) searched for the material list "
                             "and tiles", ""),
    Option("textures", bool, "texture the squares from the world's material list", True),
    Option("lighting", bool, "apply the light map as vertex colours", True),
)


class TerrainVolumeCodec(VolumeCodec):
    """``.ted``: the volume holding a terrain's grid file and blocks; exports
    to glTF as the terrain."""

    export_options = TERRAIN_OPTIONS

    def to_scene(self, doc, **options: Any):
        from .terrain_scene import to_scene
        return to_scene(doc, **options)


GridBlockCodec.export_options = (TERRAIN_OPTIONS[3],)

TED = TerrainVolumeCodec("ted", (".ted",), "Tribes terrain volume (PVOL holding the .dtf grid "
                         "file and its .dtb blocks)", (b"PVOL",))
DTB = GridBlockCodec("dtb", (".dtb",), "Darkstar terrain block (GBLK v0-5: height, material, "
                     "pin and light maps, LZH from v4)", (b"GBLK",))
DTF = GridFileCodec("dtf", (".dtf",), "Darkstar terrain grid file (GFIL: material list, "
                    "block map, block list)", (b"GFIL",))

TERRAIN_CODECS = [DTB, DTF, TED]
