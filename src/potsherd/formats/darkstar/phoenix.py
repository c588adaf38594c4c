"""Phoenix bitmaps (``PBMP`` .bmp), bitmap arrays (``PBMA`` .pba) and palettes
(``PL98`` .ppl/.pal, Microsoft ``RIFF PAL`` .pal) of the Darkstar engine.

Facts from the public engine source (GFXBitmap::read, GFXBitmapArray::read,
GFXPalette::read):

* A bitmap is a run of chunks ``<tag u32 size> payload``; the reader skips
  chunks until ``head`` (20 bytes: version<<24 | chunk count, width, height,
  bit depth, attribute), then reads exactly that many further chunks:
  ``data`` (the pixels; 8-bit rows padded to 4 bytes, then the mip levels
  at width*height/4**i bytes each), ``DETL`` (i32 mip level count), ``PiDX``
  (u32 palette index, 0xFFFFFFFF = any), ``RIFF`` (an embedded palette), and
  any other chunk, skipped.  The ``PBMP`` chunk's own size word is not used by
  the reader (real files store it loosely); it is kept as stored.
* An array is ``PBMA``, a ``head`` (8 bytes: version<<24 | chunk count,
  bitmap count), then that many chunks: ``user`` data, ``rmap`` (i32 index
  remap), ``PBMP`` followed by one bitmap's chunks.
* ``PL98``: palette count, shade shift, haze levels, haze colour, a 32-byte
  allowed-colour bit vector, per palette 256 RGBX entries + index + type, the
  remap tables the types imply (shade+haze tables, or a 64 KiB translucency
  table; then an identity map and four float maps per remapping palette), a
  bool and optional quantisation info (256 float weights, used range), and a
  u32 expansion word.

Chunk sizes are regenerated when an edited payload changes length; the
``head`` chunk count is regenerated from the chunks that follow it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.errors import EncodeError, FormatError, LimitError, TruncatedError, ValueFormatError
from ...core.stream import Reader, Writer, cached_struct
from ...registry import ByteSequence, Option, Signature
from .tree import need_array, need_bytes, need_dict, need_int, need_list, need_tag
from .treecodec import TreeCodec, as_u8

_U32 = cached_struct("<I")
_HEAD = cached_struct("<5I")
_AHEAD = cached_struct("<2I")

#: bitmap attribute bits (GFXBitmap BMA_*)
BMA_TRANSPARENT, BMA_FUZZY, BMA_TRANSLUCENT, BMA_OWN_MEM = 1, 2, 4, 8
BMA_ADDITIVE, BMA_SUBTRACTIVE, BMA_ALPHA88 = 16, 32, 64
#: most chunks before ``head`` a bitmap may have (the engine loops until it finds one)
MAX_PREAMBLE = 64
MAX_MIPS = 9

TEXTURE_OPTIONS = (
    Option("palette", str, "palette file (.ppl/.pal, or ARCHIVE::member); default: the PL98 "
                           "sub-palette the bitmap's PiDX names, from its volume, its world's "
                           "volumes, its game tree or --data-root", ""),
    Option("mips", bool, "also write every mip level", False),
    Option("data_root", str, "game data folder searched for palettes", ""),
)


def _tag(b: bytes) -> str:
    return b.decode("latin-1")


def _chunk_header(r: Reader, what: str) -> tuple[str, int, int]:
    start = r.pos
    if r.remaining < 8:
        raise TruncatedError(f"{what}: a chunk header needs 8 bytes, {r.remaining} left",
                             offset=start, expected=8, found=r.remaining)
    tag = _tag(r.read(4))
    size = r.unpack(_U32)[0]
    return tag, size, start


def _payload(r: Reader, tag: str, size: int, start: int) -> bytes:
    if size > r.remaining:
        raise TruncatedError(f"chunk {tag!r} of {size} bytes exceeds the {r.remaining} left",
                             offset=start + 4, path=tag, expected=f"<= {r.remaining}", found=size)
    return r.read(size)


# ----------------------------------------------------------------------------
# bitmaps


def decode_chunk_list(r: Reader, what: str, magic: str, head: Any, head_fields: Any,
                      body: Any, lead: list | None = None) -> list:
    """The chunk list both Phoenix containers share: the ``magic`` chunk (a header
    only: the reader ignores its size), preamble chunks, a ``head`` chunk whose low
    24 version bits count the chunks after it, then that many chunks, each decoded by
    ``body(r, tag, size, start, counted)`` (``counted``: the head has been read)."""
    chunks: list[dict] = list(lead or [])
    count = None
    i = 0
    while count is None or i < count:
        path = f"chunks[{len(chunks)}]"
        try:
            tag, size, start = _chunk_header(r, what)
            if tag == magic and count is None:
                chunks.append({"tag": tag, "size": size})
            elif tag == "head" and count is None and size == head.size:
                ver_nc, *values = r.unpack(head)
                count = ver_nc & 0xFFFFFF
                chunks.append({"tag": tag, "size": size, "version": ver_nc >> 24,
                               "chunkCount": count, **head_fields(values)})
                continue
            else:
                chunks.append(body(r, tag, size, start, count is not None))
        except FormatError as e:
            raise e.prepend(path)
        if count is None:
            if len(chunks) > MAX_PREAMBLE:
                raise LimitError(f"no 'head' chunk in the first {MAX_PREAMBLE} chunks",
                                 offset=start, path=path)
        else:
            i += 1
    return chunks


def _bitmap_head(values: list) -> dict:
    w, h, bpp, attr = values
    return {"width": w, "height": h, "bitDepth": bpp, "attribute": attr}


def decode_bitmap_chunks(r: Reader, lead: list | None = None) -> dict:
    """One bitmap's chunks (``lead``: chunks the caller already read)."""
    return {"chunks": decode_chunk_list(
        r, "bitmap", "PBMP", _HEAD, _bitmap_head,
        lambda r, tag, size, start, counted: _bitmap_chunk(tag, size,
                                                           _payload(r, tag, size, start)),
        lead)}


def _bitmap_chunk(tag: str, size: int, data: bytes) -> dict:
    if tag == "data":
        return {"tag": tag, "size": size, "pixels": as_u8(data)}
    if tag == "DETL" and size == 4:
        return {"tag": tag, "size": size, "detailLevels": int.from_bytes(data, "little", signed=True)}
    if tag == "PiDX" and size == 4:
        return {"tag": tag, "size": size, "paletteIndex": int.from_bytes(data, "little")}
    if tag == "RIFF":  # the bitmap's own palette (written with BMF_INCLUDE_PALETTE)
        try:
            whole = b"RIFF" + _U32.pack(size) + data
            pal = RIFF_PAL.decode_tree(Reader(whole), [])
            if RIFF_PAL.encode_tree(pal) == whole:
                return {"tag": tag, "size": size, "palette": pal}
        except FormatError:
            pass
    return {"tag": tag, "size": size, "raw": data}


def encode_bitmap_chunks(w: Writer, bm: Any, path: str) -> None:
    bm = need_dict(bm, path, ("chunks",))
    chunks = need_list(bm["chunks"], path + ".chunks")
    head_at = next((i for i, c in enumerate(chunks) if isinstance(c, dict) and c.get("tag") == "head"
                    and "chunkCount" in c), None)
    if head_at is None:
        raise EncodeError("a bitmap needs a 'head' chunk", path=path + ".chunks")
    for i, c in enumerate(chunks):
        cp = f"{path}.chunks[{i}]"
        c = need_dict(c, cp, ("tag", "size"))
        tag = need_tag(c["tag"], cp + ".tag")
        size = need_int(c["size"], cp + ".size")
        if i == head_at:
            count = len(chunks) - head_at - 1
            if need_int(c["chunkCount"], cp + ".chunkCount", 0, 0xFFFFFF) != count:
                pass  # regenerated from the chunks that follow
            ver = need_int(c["version"], cp + ".version", 0, 255)
            vals = [need_int(c[k], f"{cp}.{k}") for k in ("width", "height", "bitDepth", "attribute")]
            w.write(tag)
            w.pack(_U32, _HEAD.size)
            w.pack(_HEAD, (ver << 24) | count, *vals)
            continue
        if c["tag"] == "PBMP" and i < head_at and set(c) == {"tag", "size"}:
            w.write(tag)
            w.pack(_U32, size)
            continue
        if "pixels" in c:
            data = need_array(c["pixels"], "|u1", cp + ".pixels").reshape(-1).tobytes()
        elif "detailLevels" in c:
            data = need_int(c["detailLevels"], cp + ".detailLevels", -2**31, 2**31 - 1).to_bytes(
                4, "little", signed=True)
        elif "palette" in c:
            data = RIFF_PAL.encode_tree(c["palette"])[8:]
        elif "paletteIndex" in c:
            data = need_int(c["paletteIndex"], cp + ".paletteIndex").to_bytes(4, "little")
        else:
            data = need_bytes(c.get("raw"), cp + ".raw")
        w.write(tag)
        w.pack(_U32, size if size == len(data) else len(data))
        w.write(data)


def bitmap_head(bm: dict) -> dict:
    for c in bm["chunks"]:
        if c.get("tag") == "head" and "width" in c:
            return c
    raise ValueFormatError("bitmap has no head chunk")


def bitmap_field(bm: dict, key: str, default: Any = None) -> Any:
    for c in bm["chunks"]:
        if key in c:
            return c[key]
    return default


def mip_levels(bm: dict) -> list[np.ndarray]:
    """The bitmap's pixel levels as (height, width) uint8 views: level 0 with its
    rows padded to 4 bytes (the padding cut off), then each mip level at a
    quarter of the previous size, as the engine lays them out."""
    head = bitmap_head(bm)
    w, h, bpp = head["width"], head["height"], head["bitDepth"]
    pixels = bitmap_field(bm, "pixels")
    if pixels is None:
        raise ValueFormatError("bitmap has no data chunk")
    if bpp != 8:
        raise ValueFormatError(f"{bpp}-bit bitmaps are not palettised; only 8-bit pixels convert")
    stride = (w * bpp // 8 + 3) & ~3
    flat = np.asarray(pixels).reshape(-1)
    if stride * h > flat.size or w <= 0 or h <= 0:
        raise ValueFormatError(f"{flat.size} pixel bytes for a {w}x{h} bitmap", path="data")
    levels = [flat[:stride * h].reshape(h, stride)[:, :w]]
    count = min(max(int(bitmap_field(bm, "detailLevels", 1)), 1), MAX_MIPS)
    # the engine steps from level 0 by width*height (not stride*height), then by quarters
    off, step = 0, w * h
    for i in range(1, count):
        off += step
        step //= 4
        lw, lh = max(w >> i, 1), max(h >> i, 1)
        if off + lw * lh > flat.size:
            break
        levels.append(flat[off:off + lw * lh].reshape(lh, lw))
    return levels


class BitmapCodec(TreeCodec):
    """PBMP; its ``textures`` extractor is wired in by ``world.py`` (it lives in
    ``textures.py``, which builds on this module)."""

    texture_options = TEXTURE_OPTIONS

    def decode_tree(self, r: Reader, warnings: list[str]) -> Any:
        return decode_bitmap_chunks(r)

    def encode_tree(self, root: Any) -> bytes:
        w = Writer()
        encode_bitmap_chunks(w, root, "$")
        return w.getvalue()

    def info(self, doc) -> dict:
        head = bitmap_head(doc.root)
        out = {"format": self.name, "family": self.family,
               "width": head["width"], "height": head["height"], "bitDepth": head["bitDepth"],
               "attribute": head["attribute"],
               "detailLevels": bitmap_field(doc.root, "detailLevels", 1),
               "paletteIndex": bitmap_field(doc.root, "paletteIndex"),
               "chunks": [c["tag"] for c in doc.root["chunks"]]}
        return out


def _array_chunk(r: Reader, tag: str, size: int, start: int, counted: bool) -> dict:
    """A chunk of a bitmap array after its head: nested bitmaps, the remap table, or raw."""
    if tag == "PBMP" and counted:
        return {"tag": tag, "size": size, "bitmap": decode_bitmap_chunks(r)}
    if tag == "rmap" and counted and size % 4 == 0:
        data = _payload(r, tag, size, start)
        return {"tag": tag, "size": size, "remap": np.frombuffer(data, "<i4").copy()}
    return {"tag": tag, "size": size, "raw": _payload(r, tag, size, start)}


class BitmapArrayCodec(TreeCodec):
    texture_options = TEXTURE_OPTIONS

    def decode_tree(self, r: Reader, warnings: list[str]) -> Any:
        return {"chunks": decode_chunk_list(r, "bitmap array", "PBMA", _AHEAD,
                                            lambda values: {"numBitmaps": values[0]},
                                            _array_chunk)}

    def encode_tree(self, root: Any) -> bytes:
        w = Writer()
        root = need_dict(root, "$", ("chunks",))
        chunks = need_list(root["chunks"], "$.chunks")
        head_at = next((i for i, c in enumerate(chunks) if isinstance(c, dict)
                        and c.get("tag") == "head" and "numBitmaps" in c), None)
        if head_at is None:
            raise EncodeError("a bitmap array needs a 'head' chunk", path="$.chunks")
        for i, c in enumerate(chunks):
            cp = f"$.chunks[{i}]"
            c = need_dict(c, cp, ("tag", "size"))
            tag = need_tag(c["tag"], cp + ".tag")
            size = need_int(c["size"], cp + ".size")
            if i == head_at:
                ver = need_int(c["version"], cp + ".version", 0, 255)
                w.write(tag)
                w.pack(_U32, _AHEAD.size)
                w.pack(_AHEAD, (ver << 24) | (len(chunks) - head_at - 1),
                       need_int(c["numBitmaps"], cp + ".numBitmaps"))
            elif "bitmap" in c:
                w.write(tag)
                w.pack(_U32, size)  # like the file's own PBMP word: stored, not recomputed
                encode_bitmap_chunks(w, c["bitmap"], cp + ".bitmap")
            elif "remap" in c or "raw" in c:
                data = (need_array(c["remap"], "<i4", cp + ".remap").tobytes() if "remap" in c
                        else need_bytes(c["raw"], cp + ".raw"))
                w.write(tag)
                w.pack(_U32, size if size == len(data) else len(data))
                w.write(data)
            else:
                w.write(tag)
                w.pack(_U32, size)
        return w.getvalue()

    def bitmaps(self, doc) -> list[dict]:
        return [c["bitmap"] for c in doc.root["chunks"] if "bitmap" in c]

    def info(self, doc) -> dict:
        bms = self.bitmaps(doc)
        return {"format": self.name, "family": self.family, "bitmaps": len(bms),
                "sizes": [f"{bitmap_head(b)['width']}x{bitmap_head(b)['height']}" for b in bms[:32]]}


# ----------------------------------------------------------------------------
# palettes

_PL98 = cached_struct("<4I")
SHADE_HAZE, TRANSLUCENT, ADDITIVE, SUBTRACTIVE = 1, 2, 6, 8
REMAP_TYPES = (SHADE_HAZE, TRANSLUCENT, ADDITIVE, SUBTRACTIVE)
MAX_PALETTES = 256
MAX_SHADE_SHIFT = 8


def _tables_of(ptype: int, shade_levels: int, haze_levels: int) -> list[tuple[str, tuple]]:
    """Names and shapes of the first-pass remap tables of one palette."""
    if ptype == SHADE_HAZE:
        return [("shadeMap", (shade_levels * haze_levels, 256)), ("hazeMap", (shade_levels, 256))]
    if ptype in (TRANSLUCENT, ADDITIVE, SUBTRACTIVE):
        return [("transMap", (256, 256))]
    return []


_MAPS = (("identityMap", "|u1"), ("indexToR", "<f4"), ("indexToG", "<f4"), ("indexToB", "<f4"),
         ("indexToA", "<f4"))


class PL98Codec(TreeCodec):
    def decode_tree(self, r: Reader, warnings: list[str]) -> Any:
        tag = _tag(r.read(4))
        n, shade_shift, haze_levels, haze_color = r.unpack(_PL98)
        if n > MAX_PALETTES:
            raise ValueFormatError(f"{n} palettes (at most {MAX_PALETTES})", offset=4,
                                   path="numPalettes")
        if shade_shift > MAX_SHADE_SHIFT or haze_levels > 256:
            raise ValueFormatError(f"shade shift {shade_shift} / haze levels {haze_levels} "
                                   f"out of range", offset=8, path="shadeShift")
        root: dict[str, Any] = {"tag": tag, "numPalettes": n, "shadeShift": shade_shift,
                                "hazeLevels": haze_levels, "hazeColor": haze_color,
                                "allowedColorMatches": as_u8(r.read(32))}
        r.check_count(n, 1032, "palettes")
        pals = []
        for _ in range(n):
            colors = as_u8(r.read(1024)).reshape(256, 4)
            index, ptype = r.unpack(cached_struct("<2I"))
            pals.append({"colors": colors, "paletteIndex": index, "paletteType": ptype})
        shade = 1 << shade_shift
        for i, p in enumerate(pals):
            for name, shape in _tables_of(p["paletteType"], shade, haze_levels):
                size = int(np.prod(shape))
                if size > r.remaining:
                    raise TruncatedError(f"palette {i} {name} needs {size} bytes, {r.remaining} left",
                                         offset=r.pos, path=f"palettes[{i}].{name}")
                p[name] = as_u8(r.read(size)).reshape(shape)
        for i, p in enumerate(pals):
            if p["paletteType"] in REMAP_TYPES:
                for name, dt in _MAPS:
                    size = 256 * np.dtype(dt).itemsize
                    if size > r.remaining:
                        raise TruncatedError(f"palette {i} {name} needs {size} bytes",
                                             offset=r.pos, path=f"palettes[{i}].{name}")
                    p[name] = np.frombuffer(r.read(size), dt).copy()
        root["palettes"] = pals
        has_q = r.read(1)[0]
        root["hasQuantization"] = has_q
        if has_q:
            root["colorWeights"] = np.frombuffer(r.read(1024), "<f4").copy()
            root["usedRangeStart"], root["usedRangeEnd"] = r.unpack(cached_struct("<2I"))
        root["expansion"] = r.unpack(_U32)[0]
        return root

    def encode_tree(self, root: Any) -> bytes:
        root = need_dict(root, "$", ("tag", "numPalettes", "shadeShift", "hazeLevels", "hazeColor",
                                     "allowedColorMatches", "palettes", "hasQuantization",
                                     "expansion"))
        w = Writer()
        w.write(need_tag(root["tag"], "$.tag"))
        pals = need_list(root["palettes"], "$.palettes")
        shade_shift = need_int(root["shadeShift"], "$.shadeShift", 0, MAX_SHADE_SHIFT)
        haze = need_int(root["hazeLevels"], "$.hazeLevels", 0, 256)
        w.pack(_PL98, len(pals), shade_shift, haze, need_int(root["hazeColor"], "$.hazeColor"))
        w.write(need_array(root["allowedColorMatches"], "|u1", "$.allowedColorMatches", (32,)).tobytes())
        for i, p in enumerate(pals):
            pp = f"$.palettes[{i}]"
            p = need_dict(p, pp, ("colors", "paletteIndex", "paletteType"))
            w.write(need_array(p["colors"], "|u1", pp + ".colors", (256, 4)).tobytes())
            w.pack(cached_struct("<2I"), need_int(p["paletteIndex"], pp + ".paletteIndex"),
                   need_int(p["paletteType"], pp + ".paletteType"))
        shade = 1 << shade_shift
        for i, p in enumerate(pals):
            for name, shape in _tables_of(p["paletteType"], shade, haze):
                w.write(need_array(p.get(name), "|u1", f"$.palettes[{i}].{name}", shape).tobytes())
        for i, p in enumerate(pals):
            if p["paletteType"] in REMAP_TYPES:
                for name, dt in _MAPS:
                    w.write(need_array(p.get(name), dt, f"$.palettes[{i}].{name}", (256,)).tobytes())
        has_q = need_int(root["hasQuantization"], "$.hasQuantization", 0, 255)
        w.write(bytes([has_q]))
        if has_q:
            w.write(need_array(root.get("colorWeights"), "<f4", "$.colorWeights", (256,)).tobytes())
            w.pack(cached_struct("<2I"), need_int(root.get("usedRangeStart"), "$.usedRangeStart"),
                   need_int(root.get("usedRangeEnd"), "$.usedRangeEnd"))
        w.pack(_U32, need_int(root["expansion"], "$.expansion"))
        return w.getvalue()

    def info(self, doc) -> dict:
        return {"format": self.name, "family": self.family,
                "palettes": [{"index": p["paletteIndex"], "type": p["paletteType"]}
                             for p in doc.root["palettes"]],
                "shadeLevels": 1 << doc.root["shadeShift"], "hazeLevels": doc.root["hazeLevels"]}


class RiffPaletteCodec(TreeCodec):
    """Microsoft RIFF ``PAL `` palettes: the chunks inside the RIFF form are kept
    in order (``data``: version, count, PALETTEENTRY colours, extra bytes)."""

    #: "RIFF" alone is every RIFF file (WAV, AVI...): the form type says PAL
    signatures = (Signature("", (ByteSequence(0, b"RIFF"), ByteSequence(8, b"PAL "))),)

    def decode_tree(self, r: Reader, warnings: list[str]) -> Any:
        tag = _tag(r.read(4))
        riff_size = r.unpack(_U32)[0]
        if riff_size > r.remaining or riff_size < 4:
            raise TruncatedError(f"RIFF form of {riff_size} bytes, {r.remaining} left",
                                 offset=4, path="riffSize", expected=f"4..{r.remaining}",
                                 found=riff_size)
        end = r.pos + riff_size
        sub = Reader(r.buf, r.pos, end, r.limits)
        form = _tag(sub.read(4))
        chunks = []
        while sub.remaining >= 8:
            ctag, size, start = _chunk_header(sub, "RIFF")
            try:
                data = _payload(sub, ctag, size, start)
            except FormatError as e:
                raise e.prepend(f"chunks[{len(chunks)}]")
            pad = sub.read(min(size & 1, sub.remaining))
            c: dict[str, Any] = {"tag": ctag, "size": size}
            if ctag == "data" and size >= 4:
                ver, cnt = int.from_bytes(data[:2], "little"), int.from_bytes(data[2:4], "little")
                ncol = min(cnt, (size - 4) // 4)
                c.update(version=ver, count=cnt,
                         colors=as_u8(data[4:4 + 4 * ncol]).reshape(ncol, 4),
                         extra=data[4 + 4 * ncol:])
            elif size == 32:
                # a 256-bit vector: one flag per palette entry, least significant bit first
                # (palette tools' 'offl', 'tran', 'unde' chunks; not read by the engine)
                c["entryFlags"] = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")
            else:
                c["raw"] = data
            c["pad"] = pad
            chunks.append(c)
            if len(chunks) > 4096:
                raise LimitError("more than 4096 chunks in a RIFF palette", offset=start)
        rest = sub.tail()
        r.pos = end
        out = {"tag": tag, "riffSize": riff_size, "form": form, "chunks": chunks}
        if rest:
            out["raw"] = rest  # fewer than 8 bytes left inside the form
        return out

    def encode_tree(self, root: Any) -> bytes:
        root = need_dict(root, "$", ("tag", "riffSize", "form", "chunks"))
        body = Writer()
        body.write(need_tag(root["form"], "$.form"))
        for i, c in enumerate(need_list(root["chunks"], "$.chunks")):
            cp = f"$.chunks[{i}]"
            c = need_dict(c, cp, ("tag", "size", "pad"))
            if "colors" in c:
                cols = need_array(c["colors"], "|u1", cp + ".colors")
                if cols.ndim != 2 or cols.shape[1] != 4:
                    raise EncodeError("colors are rows of 4 bytes", path=cp + ".colors")
                data = (need_int(c["version"], cp + ".version", 0, 0xFFFF).to_bytes(2, "little")
                        + need_int(c["count"], cp + ".count", 0, 0xFFFF).to_bytes(2, "little")
                        + cols.tobytes() + need_bytes(c.get("extra", b""), cp + ".extra"))
            elif "entryFlags" in c:
                flags = need_array(c["entryFlags"], "|u1", cp + ".entryFlags", (256,))
                if flags.max(initial=0) > 1:
                    raise EncodeError("entry flags are 0 or 1", path=cp + ".entryFlags")
                data = np.packbits(flags, bitorder="little").tobytes()
            else:
                data = need_bytes(c.get("raw"), cp + ".raw")
            size = need_int(c["size"], cp + ".size")
            body.write(need_tag(c["tag"], cp + ".tag"))
            body.pack(_U32, size if size == len(data) else len(data))
            body.write(data)
            body.write(need_bytes(c["pad"], cp + ".pad") if size == len(data) else bytes(len(data) & 1))
        body.write(need_bytes(root.get("raw", b""), "$.raw"))
        payload = body.getvalue()
        size = need_int(root["riffSize"], "$.riffSize")
        return (need_tag(root["tag"], "$.tag") + _U32.pack(size if size == len(payload) else len(payload))
                + payload)

    def info(self, doc) -> dict:
        cols = next((c for c in doc.root["chunks"] if "colors" in c), None)
        return {"format": self.name, "family": self.family, "form": doc.root["form"],
                "colors": 0 if cols is None else len(cols["colors"])}


def palette_colors(doc, index: int | None = None) -> np.ndarray:
    """(256, 3) uint8 RGB of a palette document: the PL98 palette whose
    ``paletteIndex`` is ``index`` (else the first), or the RIFF colours."""
    root = doc.root
    if doc.format == "pl98":
        pals = root["palettes"]
        if not pals:
            raise ValueFormatError("the PL98 file holds no palette")
        pick = next((p for p in pals if index is not None and p["paletteIndex"] == index), pals[0])
        return np.ascontiguousarray(pick["colors"][:, :3])
    cols = next((c["colors"] for c in root["chunks"] if "colors" in c), None)
    if cols is None:
        raise ValueFormatError("the RIFF palette has no data chunk")
    out = np.zeros((256, 3), np.uint8)
    out[:min(256, len(cols))] = cols[:256, :3]
    return out


BMP = BitmapCodec("pbmp", (".bmp",), "Darkstar Phoenix bitmap (PBMP chunks: head, data + mips, "
                  "DETL, PiDX)", (b"PBMP",))
PBA = BitmapArrayCodec("pbma", (".pba",), "Darkstar Phoenix bitmap array (PBMA)", (b"PBMA",))
PPL = PL98Codec("pl98", (".ppl", ".pal"), "Darkstar PL98 multi-palette (shade, haze and "
                "translucency tables)", (b"PL98",))
RIFF_PAL = RiffPaletteCodec("riffpal", (".pal",), "Microsoft RIFF palette (PAL data)", (b"RIFF",))

CODECS = [BMP, PBA, PPL, RIFF_PAL]
