"""Darkstar volume archives (``.vol``): ``PVOL`` (Starsiege, Tribes) and the
``" VOL"`` / ``"VOL "`` variants.

From the public engine source (VolumeRWStream): the file is ``PVOL``, a u32
offset of the footer, the member blocks (``VBLK`` <size word> data, the size
word's bit 31 = dword alignment, data padded to 4), then at that offset a
``vols`` block (the NUL-terminated member names) and a ``voli`` block of 17-byte
records (u32 id, i32 name offset or -1, u32 block offset, u32 size, u8
compression: 0 none, 1 RLE, 2 LZ, 3 LZH).  Every byte is kept: the region
before the footer is a list of blocks and raw gaps, the footer a list of
blocks (unknown ones raw), so an archive with odd padding or foreign blocks
still rebuilds exactly; the member list is derived from the index.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...core.errors import EncodeError, FormatError, LimitError, TruncatedError, ValueFormatError
from ...core.limits import DEFAULT_LIMITS
from ...core.stream import Reader, Writer, cached_struct
from .tree import need_array, need_bytes, need_dict, need_int, need_list, need_tag
from .treecodec import TreeCodec

_U32 = cached_struct("<I")
ALIGN_DWORD = 0x80000000
ITEM_DTYPE = np.dtype([("id", "<u4"), ("nameOffset", "<i4"), ("blockOffset", "<u4"),
                       ("size", "<u4"), ("compressType", "u1")])
ITEM_COLUMNS = ("id", "nameOffset", "blockOffset", "size", "compressType")
COMPRESSION = {0: "none", 1: "rle", 2: "lz", 3: "lzh"}
MAX_BLOCKS = 1 << 20


def _tag(b: bytes) -> str:
    return b.decode("latin-1")


def _read_block(r: Reader, end: int) -> dict | None:
    """One ``<tag><size word><data><pad>`` block ending by ``end``, or None when
    the bytes there are not one (the caller keeps them raw)."""
    if end - r.pos < 8:
        return None
    p = r.pos
    tag = r.buf[p:p + 4]
    if not all(0x20 <= c < 0x7F for c in tag):
        return None
    word = int.from_bytes(r.buf[p + 4:p + 8], "little")
    size = word & ~ALIGN_DWORD
    if p + 8 + size > end:
        return None
    align = 4 if word & ALIGN_DWORD else 2
    npad = min((-size) % align, end - (p + 8 + size))
    r.pos = p + 8
    data = r.read(size)
    pad = r.read(npad)
    return {"tag": _tag(tag), "sizeWord": word, "data": data, "pad": pad}


def _read_region(r: Reader, end: int, what: str) -> list[dict]:
    out: list[dict] = []
    while r.pos < end:
        b = _read_block(r, end)
        if b is None:
            out.append({"raw": r.read(end - r.pos)})
            break
        out.append(b)
        if len(out) > MAX_BLOCKS:
            raise LimitError(f"more than {MAX_BLOCKS} blocks in the {what}", offset=r.pos)
    return out


def _write_block(w: Writer, b: Any, path: str) -> None:
    b = need_dict(b, path)
    if set(b) == {"raw"}:
        w.write(need_bytes(b["raw"], path + ".raw"))
        return
    need_dict(b, path, ("tag", "sizeWord", "pad"))
    if "strings" in b:
        data = need_bytes(b["strings"], path + ".strings")
    elif "items" in b:
        data = items_to_bytes(b["items"], path + ".items")
    else:
        data = need_bytes(b.get("data"), path + ".data")
    word = need_int(b["sizeWord"], path + ".sizeWord")
    pad = need_bytes(b["pad"], path + ".pad")
    if word & ~ALIGN_DWORD != len(data):
        if len(data) > ~ALIGN_DWORD & 0xFFFFFFFF:
            raise EncodeError("block too large", path=path)
        word = (word & ALIGN_DWORD) | len(data)
        pad = bytes((-len(data)) % (4 if word & ALIGN_DWORD else 2))
    w.write(need_tag(b["tag"], path + ".tag"))
    w.pack(_U32, word)
    w.write(data)
    w.write(pad)


def items_to_bytes(items: Any, path: str) -> bytes:
    items = need_dict(items, path, ITEM_COLUMNS)
    cols = {k: need_array(items[k], ITEM_DTYPE[k].str, f"{path}.{k}") for k in ITEM_COLUMNS}
    n = {len(c) for c in cols.values()}
    if len(n) != 1 or any(c.ndim != 1 for c in cols.values()):
        raise EncodeError("index columns differ in length", path=path)
    table = np.zeros(n.pop(), ITEM_DTYPE)
    for k, c in cols.items():
        table[k] = c
    return table.tobytes()


class VolumeCodec(TreeCodec):
    def decode_tree(self, r: Reader, warnings: list[str]) -> Any:
        tag = _tag(r.read(4))
        word = r.unpack(_U32)[0]
        footer = word & 0xFFFFFF if tag == "VOL " else word
        if not 8 <= footer <= r.end:
            raise ValueFormatError(f"footer offset {footer} outside the file ({r.end} bytes)",
                                   offset=4, path="footerOffset", found=footer)
        blocks = _read_region(r, footer, "member data")
        tail = _read_region(r, r.end, "footer")
        for b in tail:
            if b.get("tag") == "vols":
                b["strings"] = b.pop("data")
            elif b.get("tag") == "voli" and len(b["data"]) % ITEM_DTYPE.itemsize == 0:
                table = np.frombuffer(b.pop("data"), ITEM_DTYPE)
                b["items"] = {k: table[k].copy() for k in ITEM_COLUMNS}
        return {"tag": tag, "footerWord": word, "blocks": blocks, "footer": tail}

    def encode_tree(self, root: Any) -> bytes:
        root = need_dict(root, "$", ("tag", "footerWord", "blocks", "footer"))
        w = Writer()
        w.write(need_tag(root["tag"], "$.tag"))
        w.pack(_U32, 0)
        for i, b in enumerate(need_list(root["blocks"], "$.blocks")):
            _write_block(w, b, f"$.blocks[{i}]")
        footer = len(w.getvalue())
        for i, b in enumerate(need_list(root["footer"], "$.footer")):
            _write_block(w, b, f"$.footer[{i}]")
        data = bytearray(w.getvalue())
        word = need_int(root["footerWord"], "$.footerWord")
        if root["tag"] == "VOL ":
            word = (word & 0xFF000000) | footer if word & 0xFFFFFF != footer else word
        elif word != footer:
            word = footer
        data[4:8] = _U32.pack(word)
        return bytes(data)

    def info(self, doc) -> dict:
        members = list_members(doc)
        comp = {}
        for m in members:
            comp[m.compression] = comp.get(m.compression, 0) + 1
        return {"format": self.name, "family": self.family, "variant": doc.root["tag"],
                "members": len(members), "compression": comp,
                "bytes": sum(m.size for m in members)}

    @property
    def texture_options(self):
        from .phoenix import TEXTURE_OPTIONS
        return TEXTURE_OPTIONS

    def textures(self, doc, **options: Any) -> list:
        """Every bitmap and bitmap array inside the volume, as PNG, each drawn with
        the palette its PiDX names (one palette look-up for the whole volume)."""
        from ... import registry
        from .textures import PaletteFinder, bitmap_textures, windows_bitmap_textures
        out = []
        src = doc.source or "volume.vol"
        options["finder"] = PaletteFinder(
            f"{src}::member", palette=options.get("palette") or "",
            data_root=options.get("data_root") or None, limits=doc.limits, warnings=doc.warnings)
        for m in list_members(doc):
            if not m.name.lower().endswith((".bmp", ".pba")):
                continue
            path = f"{src}::{m.name}"
            try:
                data = member_bytes(doc, m)
                if data[:2] == b"BM":  # a Windows bitmap, drawn by the same palette rule
                    out.extend(windows_bitmap_textures(data, path, **options))
                    continue
                member = registry.decode(data, path=path, limits=doc.limits or DEFAULT_LIMITS)
                out.extend(bitmap_textures(member, **options))
            except FormatError as e:
                doc.warnings.append(f"{m.name}: {e}")
        return out

    # container protocol (see potsherd.containers)
    def member_names(self, doc) -> list[str]:
        return [m.name for m in list_members(doc)]

    def read_member(self, doc, name: str) -> bytes:
        return member_bytes(doc, find_member(doc, name))


class Member(NamedTuple):
    name: str
    index: int          #: row in the index
    block_offset: int
    size: int           #: size recorded in the index (uncompressed)
    compression: str
    stored: int         #: bytes of its block


def _index(doc) -> tuple[bytes, dict]:
    strings = b""
    items = None
    for b in doc.root["footer"]:
        if "strings" in b:
            strings = b["strings"]
        if "items" in b:
            items = b["items"]
    if items is None:
        raise ValueFormatError("the volume has no 'voli' index block", path="footer")
    return strings, items


def _block_offsets(doc) -> dict[int, dict]:
    out, off = {}, 8
    for b in doc.root["blocks"]:
        if "raw" in b and set(b) == {"raw"}:
            off += len(b["raw"])
            continue
        out[off] = b
        off += 8 + len(b["data"]) + len(b["pad"])
    return out


def block_map(doc) -> dict[int, dict]:
    """Block offset -> block, for :func:`member_bytes` over many members."""
    return _block_offsets(doc)


def list_members(doc) -> list[Member]:
    strings, items = _index(doc)
    blocks = _block_offsets(doc)
    out = []
    for i in range(len(items["id"])):
        no = int(items["nameOffset"][i])
        if 0 <= no < len(strings):
            end = strings.find(b"\0", no)
            name = strings[no:end if end >= 0 else len(strings)].decode("latin-1")
        else:
            name = f"{int(items['id'][i]):08X}"
        off = int(items["blockOffset"][i])
        b = blocks.get(off)
        out.append(Member(name, i, off, int(items["size"][i]),
                          COMPRESSION.get(int(items["compressType"][i]),
                                          str(int(items["compressType"][i]))),
                          -1 if b is None else len(b["data"])))
    return out


def find_member(doc, name: str) -> Member:
    """The member named ``name`` (case-insensitive, as the engine looks names up)."""
    want = name.replace("\\", "/").lower()
    for m in list_members(doc):
        if m.name.replace("\\", "/").lower() == want:
            return m
    raise FormatError(f"no member {name!r} in this volume", path="members", found=name)


def member_bytes(doc, m: Member, blocks: dict | None = None) -> bytes:
    """A member's bytes: uncompressed members as stored, RLE and LZH members
    expanded (the LZ kind is refused).  ``blocks``: the archive's
    :func:`block_map`, made once when many members are read (so extracting is
    linear in the members, not quadratic)."""
    b = (_block_offsets(doc) if blocks is None else blocks).get(m.block_offset)
    if b is None:
        raise FormatError(f"member {m.name!r}: no block at offset {m.block_offset}",
                          offset=m.block_offset, path=f"voli[{m.index}].blockOffset")
    if m.compression == "rle":
        return rle_decode(b["data"], m.size, f"voli[{m.index}]")
    if m.compression == "lzh":
        from .lzh import decode as lzh_decode
        limits = getattr(doc, "limits", None) or DEFAULT_LIMITS
        return lzh_decode(b["data"], m.size, limits=limits, path=f"voli[{m.index}]")[0]
    if m.compression != "none":
        raise FormatError(f"member {m.name!r} is {m.compression}-compressed; potsherd extracts "
                          f"uncompressed, RLE and LZH members only", path=f"voli[{m.index}]")
    if m.size > len(b["data"]):
        raise TruncatedError(f"member {m.name!r}: index says {m.size} bytes, its block holds "
                             f"{len(b['data'])}", offset=m.block_offset,
                             path=f"voli[{m.index}].size")
    return b["data"][:m.size]


#: largest RLE member potsherd expands
MAX_RLE_OUTPUT = 256 << 20


def rle_decode(data: bytes, size: int, path: str = "") -> bytes:
    """The engine's RLE stream (RLERStream): a control byte with bit 7 set is a
    run of ``c & 127`` copies of the next byte, otherwise ``c`` literal bytes
    follow.  Exactly ``size`` bytes are produced, or a FormatError."""
    if size > MAX_RLE_OUTPUT:
        raise LimitError(f"RLE member of {size} bytes exceeds {MAX_RLE_OUTPUT}", path=path)
    out = bytearray()
    pos, n = 0, len(data)
    while len(out) < size:
        if pos >= n:
            raise TruncatedError(f"RLE data ends after {len(out)} of {size} bytes", offset=pos,
                                 path=path)
        c = data[pos]
        pos += 1
        if c & 0x80:
            if pos >= n:
                raise TruncatedError("RLE run without its byte", offset=pos, path=path)
            out += bytes([data[pos]]) * (c & 0x7F)
            pos += 1
        else:
            out += data[pos:pos + c]
            pos += c
    if len(out) != size:
        raise FormatError(f"RLE data expands to {len(out)} bytes, the index says {size}",
                          path=path)
    return bytes(out)


def rle_encode(data: bytes) -> bytes:
    """RLE the way the format reads it (runs of 3+ equal bytes, literals up to 127)."""
    out, i, n = bytearray(), 0, len(data)
    lit = bytearray()
    while i < n:
        j = i
        while j < n and j - i < 127 and data[j] == data[i]:
            j += 1
        if j - i >= 3:
            if lit:
                out += bytes([len(lit)]) + lit
                lit = bytearray()
            out += bytes([0x80 | (j - i), data[i]])
            i = j
        else:
            lit.append(data[i])
            i += 1
            if len(lit) == 127:
                out += bytes([127]) + lit
                lit = bytearray()
    if lit:
        out += bytes([len(lit)]) + lit
    return bytes(out)


def build_volume(files: list[tuple[str, bytes]], tag: str = "PVOL",
                 compress: str = "none") -> bytes:
    """A new volume holding ``files`` (name, bytes) in order, laid out as the
    engine writes one (dword-aligned blocks, names, 17-byte index); members
    stored uncompressed, or LZH-compressed with ``compress="lzh"``."""
    if compress not in ("none", "lzh"):
        raise EncodeError(f"volume members are written uncompressed or LZH, not {compress!r}")
    sizes = [len(d) for _, d in files]
    if compress == "lzh":
        from .lzh import encode as lzh_encode
        files = [(name, lzh_encode(d)) for name, d in files]
    blocks, offsets, off = [], [], 8
    for name, data in files:
        pad = bytes((-len(data)) % 4)
        blocks.append({"tag": "VBLK", "sizeWord": ALIGN_DWORD | len(data), "data": bytes(data),
                       "pad": pad})
        offsets.append(off)
        off += 8 + len(data) + len(pad)
    strings, name_offsets = b"", []
    for name, _ in files:
        name_offsets.append(len(strings))
        strings += name.encode("latin-1") + b"\0"
    items = {"id": np.zeros(len(files), "<u4"),
             "nameOffset": np.array(name_offsets, "<i4"),
             "blockOffset": np.array(offsets, "<u4"),
             "size": np.array(sizes, "<u4"),
             "compressType": np.full(len(files), 3 if compress == "lzh" else 0, "u1")}
    footer = [{"tag": "vols", "sizeWord": len(strings), "strings": strings,
               "pad": bytes(len(strings) & 1)},
              {"tag": "voli", "sizeWord": ITEM_DTYPE.itemsize * len(files), "items": items,
               "pad": bytes((ITEM_DTYPE.itemsize * len(files)) & 1)}]
    root = {"tag": tag, "footerWord": off, "blocks": blocks, "footer": footer}
    return VOL.encode_tree(root)


VOL = VolumeCodec("vol", (".vol",), "Darkstar volume archive (PVOL: VBLK members, vols names, "
                  "voli index)", (b"PVOL", b" VOL", b"VOL "))
