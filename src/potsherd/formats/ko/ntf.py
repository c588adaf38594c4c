"""NTF records ("Noah Texture File", the engine's ``CN3Texture``).

One NTF record is a whole ``.dxt`` file, each element of a ``.gtt`` file and
each gtd lightmap (storage kind ``ntf`` in the KO wire layout).  Layout
(docs/formats/knight-online.md, "Textures (NTF)")::

    string name                         i32 signed length + raw bytes
    char id[3] = "NTF"; u8 version      3 plain, 7 RC4-encrypted payload
    i32 width; i32 height
    u32 format                          D3DFORMAT (DXT1..DXT5 FourCC, 20..26)
    i32 mipmap                          Win32 BOOL, kept as stored
    main levels                         sized by the writer's payload rule
    fallback                            DXT only: the 16-bit copy for cards
                                        without DXT support
    thumbnail                           256x256x2 "voodoo" copy (see rule)

The name and header are described by a small layout (``layouts/ntf.layout``,
:data:`NTF_HEADER`) interpreted by the shared layout engine; only the payload
rule, which a table cannot express, is Python (:func:`payload_plan`).

Document value of one record: a dict with the header fields (``name``,
``id``, ``version``, ``width``, ``height``, ``format``, ``mipmap``), then
``levels`` (list of bytes, one per main level, *ciphertext* for version 7)
and either ``fallback`` + ``thumbnail`` (bytes, sized by the rule) or, for a
standalone ``.dxt`` whose remainder does not follow the rule, ``tail`` (the
raw rest of the file).  JSON: every byte blob is a lowercase hex string.
"""
from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any

import numpy as np

from ...core.errors import (EncodeError, FormatError, JsonFormatError, MagicError,
                            ValueFormatError)
from ...core.expr import Scope
from ...core.layout import JsonCtx, Layout, Storage, hex_to_bytes, parse_layout_text
from ...core.stream import Reader, Writer

# ----------------------------------------------------------------------------
# formats

FOURCC_DXT1 = 0x31545844
FOURCC_DXT2 = 0x32545844
FOURCC_DXT3 = 0x33545844
FOURCC_DXT4 = 0x34545844
FOURCC_DXT5 = 0x35545844
DXT_FORMATS = (FOURCC_DXT1, FOURCC_DXT2, FOURCC_DXT3, FOURCC_DXT4, FOURCC_DXT5)

D3DFMT_R8G8B8 = 20
D3DFMT_A8R8G8B8 = 21
D3DFMT_X8R8G8B8 = 22
D3DFMT_R5G6B5 = 23
D3DFMT_X1R5G5B5 = 24
D3DFMT_A1R5G5B5 = 25
D3DFMT_A4R4G4B4 = 26

#: bytes per pixel of the uncompressed formats the engine writes
PIXEL_BYTES = {D3DFMT_R8G8B8: 3, D3DFMT_A8R8G8B8: 4, D3DFMT_X8R8G8B8: 4, D3DFMT_R5G6B5: 2,
               D3DFMT_X1R5G5B5: 2, D3DFMT_A1R5G5B5: 2, D3DFMT_A4R4G4B4: 2}

FORMAT_NAMES = {
    FOURCC_DXT1: "DXT1", FOURCC_DXT2: "DXT2", FOURCC_DXT3: "DXT3", FOURCC_DXT4: "DXT4",
    FOURCC_DXT5: "DXT5", D3DFMT_R8G8B8: "R8G8B8", D3DFMT_A8R8G8B8: "A8R8G8B8",
    D3DFMT_X8R8G8B8: "X8R8G8B8", D3DFMT_R5G6B5: "R5G6B5", D3DFMT_X1R5G5B5: "X1R5G5B5",
    D3DFMT_A1R5G5B5: "A1R5G5B5", D3DFMT_A4R4G4B4: "A4R4G4B4",
}

#: the 256 x 256 x 2-byte copy written after no-mip textures of width >= 512
#: (uncompressed) or >= 1024 (DXT)
THUMBNAIL_BYTES = 256 * 256 * 2

ENCRYPTED_VERSION = 7


def format_name(fmt: int) -> str:
    """``DXT1``, ``A8R8G8B8``... or ``unknown(0x...)``."""
    return FORMAT_NAMES.get(fmt, f"unknown(0x{fmt:08X})")


def is_known_format(fmt: int) -> bool:
    return fmt in DXT_FORMATS or fmt in PIXEL_BYTES


# ----------------------------------------------------------------------------
# the payload rule


def level_dims(width: int, height: int, mipmap: int) -> list[tuple[int, int]]:
    """Main levels ``(w, h)``: with mipmaps ``(w >> i, h >> i)`` while both
    sides are >= 4 (level 0 is always present); without, just ``(w, h)``."""
    dims = [(width, height)]
    if mipmap:
        i = 1
        while (width >> i) >= 4 and (height >> i) >= 4:
            dims.append((width >> i, height >> i))
            i += 1
    return dims


def level_bytes(fmt: int, w: int, h: int) -> int:
    """Bytes of one main level as the engine sizes it."""
    if fmt == FOURCC_DXT1:
        return w * h // 2
    if fmt in DXT_FORMATS:
        return w * h
    return w * h * PIXEL_BYTES[fmt]


def payload_plan(fmt: int, width: int, height: int, mipmap: int) -> tuple[list[int], int, int]:
    """The writer's payload rule: (main level sizes, fallback size, thumbnail size).

    Raises :class:`ValueFormatError` for an unknown format or a non-positive
    size (the rule says nothing then)."""
    if not is_known_format(fmt):
        raise ValueFormatError(f"pixel format {format_name(fmt)} has no known payload size",
                               path="format", found=fmt)
    if width <= 0 or height <= 0:
        raise ValueFormatError(f"texture size {width} x {height} is not positive",
                               path="width", found=f"{width}x{height}")
    dims = level_dims(width, height, mipmap)
    sizes = [level_bytes(fmt, w, h) for w, h in dims]
    fallback = thumbnail = 0
    if fmt in DXT_FORMATS:
        if mipmap:
            fallback = sum((w // 2) * (h // 2) * 2 for w, h in dims[:-1])
        else:
            fallback = (width // 2) * (height // 2) * 2
            if width >= 1024:
                thumbnail = THUMBNAIL_BYTES
    elif not mipmap and width >= 512:
        thumbnail = THUMBNAIL_BYTES
    return sizes, fallback, thumbnail


# ----------------------------------------------------------------------------
# version 7 decryption (RC4, CryptoAPI-derived key, restarting per read call)

#: the engine's passphrase (``CWinCrypt::Cipher`` in Client/N3Base/WinCrypt.h)
NTF7_PASSPHRASE = b"owsd9012%$1as!wpow1033b%!@%12"


def ntf7_key() -> bytes:
    """``CryptDeriveKey(CALG_RC4, SHA-1(passphrase), 128-bit)``: the first 16
    bytes of the SHA-1 of the passphrase (no terminating NUL)."""
    return hashlib.sha1(NTF7_PASSPHRASE).digest()[:16]


_KEYSTREAM = np.zeros(0, dtype=np.uint8)


def _rc4_keystream(key: bytes, n: int) -> np.ndarray:
    """The first ``n`` RC4 keystream bytes for ``key``."""
    s = list(range(256))
    j = 0
    klen = len(key)
    for i in range(256):
        j = (j + s[i] + key[i % klen]) & 0xFF
        s[i], s[j] = s[j], s[i]
    out = bytearray(n)
    i = j = 0
    for k in range(n):
        i = (i + 1) & 0xFF
        si = s[i]
        j = (j + si) & 0xFF
        sj = s[j]
        s[i], s[j] = sj, si
        out[k] = s[(si + sj) & 0xFF]
    return np.frombuffer(bytes(out), dtype=np.uint8)


def ntf7_keystream(n: int) -> np.ndarray:
    """Keystream prefix of length ``n``.  Every engine read call restarts RC4
    with the same key, so every call XORs with a prefix of one stream: it is
    computed once (grown on demand) and reused."""
    global _KEYSTREAM
    if _KEYSTREAM.size < n:
        _KEYSTREAM = _rc4_keystream(ntf7_key(), max(n, 2 * _KEYSTREAM.size, 4096))
    return _KEYSTREAM[:n]


def decrypt_level(data: bytes, fmt: int, width: int) -> bytes:
    """Plain bytes of one version-7 main level: DXT levels are one read call,
    uncompressed levels one read call per scanline (``width * bpp`` bytes)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    if fmt in DXT_FORMATS or not buf.size:
        return (buf ^ ntf7_keystream(buf.size)).tobytes()
    stride = width * PIXEL_BYTES[fmt]
    rows = buf.size // stride
    body = buf[:rows * stride].reshape(rows, stride) ^ ntf7_keystream(stride)[None, :]
    rest = buf[rows * stride:] ^ ntf7_keystream(buf.size - rows * stride)
    return body.tobytes() + rest.tobytes()


def plain_levels(rec: dict) -> list[bytes]:
    """Main levels as plain bytes (decrypting version 7 payloads)."""
    levels = rec.get("levels") or []
    if rec.get("version") != ENCRYPTED_VERSION:
        return [bytes(x) for x in levels]
    dims = level_dims(rec["width"], rec["height"], rec["mipmap"])
    return [decrypt_level(bytes(x), rec["format"], w) for x, (w, _h) in zip(levels, dims)]


# ----------------------------------------------------------------------------
# the header, as layout data (layouts/ntf.layout)

def _load_header() -> Layout:
    """The header layout from ``layouts/ntf.layout`` (rows know their file:line,
    so a header error names the row that declared the field)."""
    path = resources.files(__package__).joinpath("layouts/ntf.layout")
    return Layout(parse_layout_text(path.read_text(encoding="utf-8"), source=str(path)))


NTF_HEADER = _load_header()
_HEADER = NTF_HEADER.record("ntfHeader")
HEADER_FIELDS = tuple(f.name for f in _HEADER.fields)
NTF_MAGIC = b"NTF"


def _bytes_json(v: Any) -> str:
    return bytes(v).hex()


class NtfStorage(Storage):
    """One NTF record.

    ``standalone=False`` (the ``ntf`` storage of the wire layout): the payload
    after the main levels is exactly the rule's fallback + thumbnail.
    ``standalone=True`` (a ``.dxt`` file): the rest of the input after the main
    levels is kept; it is split into fallback + thumbnail when its length is
    the rule's, else kept whole as ``tail`` with a warning.
    """

    def __init__(self, standalone: bool = False) -> None:
        self.standalone = standalone
        self.min_size = _HEADER.min_size  # 4 (name length) + 20 (header)

    def describe(self) -> str:
        return "ntf"

    # --- decode ---------------------------------------------------------
    def decode(self, r: Reader, s: Scope) -> Any:
        rec = _HEADER.decode(r, s)
        if rec["id"] != NTF_MAGIC:
            raise MagicError("not an NTF record", offset=r.pos - 20, path="id",
                             expected=NTF_MAGIC.hex(), found=bytes(rec["id"]).hex())
        fmt, width, height, mipmap = rec["format"], rec["width"], rec["height"], rec["mipmap"]
        try:
            sizes, fallback, thumbnail = payload_plan(fmt, width, height, mipmap)
        except ValueFormatError as e:
            if not self.standalone:
                e.offset = r.pos - 8 if e.path == "format" else r.pos - 16
                raise
            s.warnings.append(f"NTF {e.message}: the payload ({r.remaining} bytes) is kept raw")
            rec["levels"] = []
            rec["tail"] = r.tail()
            return rec
        total = sum(sizes)
        if total > r.remaining:
            raise FormatError(f"main levels need {total} bytes, {r.remaining} left", offset=r.pos,
                              path="levels", expected=total, found=r.remaining)
        rec["levels"] = [r.read(n) for n in sizes]
        extra = fallback + thumbnail
        if self.standalone:
            rest = r.tail()
            if len(rest) == extra:
                rec["fallback"], rec["thumbnail"] = rest[:fallback], rest[fallback:]
            else:
                s.warnings.append(
                    f"NTF payload after the main levels is {len(rest)} bytes, the writer's rule "
                    f"gives {extra} (fallback {fallback} + thumbnail {thumbnail}); kept raw as tail")
                rec["tail"] = rest
            return rec
        if extra > r.remaining:
            raise FormatError(f"fallback and thumbnail need {extra} bytes, {r.remaining} left",
                              offset=r.pos, path="fallback", expected=extra, found=r.remaining)
        rec["fallback"] = r.read(fallback)
        rec["thumbnail"] = r.read(thumbnail)
        return rec

    # --- encode ---------------------------------------------------------
    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, dict):
            raise EncodeError(f"an NTF record is a dict, found {type(v).__name__}")
        extra_keys = set(v) - set(HEADER_FIELDS) - {"levels", "fallback", "thumbnail", "tail"}
        if extra_keys:
            raise EncodeError(f"unknown fields {sorted(extra_keys)} in an NTF record")
        if v.get("id") != NTF_MAGIC:
            raise EncodeError("an NTF record's id must be 'NTF'", path="id")
        header = {k: v[k] for k in HEADER_FIELDS if k in v}
        _HEADER.encode(w, header, s)
        levels = v.get("levels")
        if not isinstance(levels, list):
            raise EncodeError("levels must be a list of byte strings", path="levels")
        has_tail = "tail" in v
        if has_tail and (not self.standalone or "fallback" in v or "thumbnail" in v):
            raise EncodeError("tail is only for a standalone .dxt, instead of fallback + thumbnail",
                              path="tail")
        try:
            sizes, fallback, thumbnail = payload_plan(v["format"], v["width"], v["height"],
                                                      v["mipmap"])
        except ValueFormatError:
            if not (has_tail and not levels):
                raise EncodeError(f"format {format_name(v['format'])} or size {v['width']} x "
                                  f"{v['height']} has no payload rule: keep the payload as tail "
                                  f"with no levels", path="levels") from None
            sizes = []
        if len(levels) != len(sizes):
            raise EncodeError(f"{len(levels)} main levels, the header implies {len(sizes)}",
                              path="levels")
        for i, (lv, n) in enumerate(zip(levels, sizes)):
            if not isinstance(lv, (bytes, bytearray)) or len(lv) != n:
                raise EncodeError(f"level {i} must be {n} bytes", path=f"levels[{i}]",
                                  found=len(lv) if isinstance(lv, (bytes, bytearray)) else type(lv).__name__)
            w.write(bytes(lv))
        if has_tail:
            if not isinstance(v["tail"], (bytes, bytearray)):
                raise EncodeError("tail must be bytes", path="tail")
            w.write(bytes(v["tail"]))
            return
        for key, n in (("fallback", fallback), ("thumbnail", thumbnail)):
            x = v.get(key)
            if not isinstance(x, (bytes, bytearray)) or len(x) != n:
                raise EncodeError(f"{key} must be {n} bytes", path=key,
                                  found=len(x) if isinstance(x, (bytes, bytearray)) else None)
            w.write(bytes(x))

    # --- JSON -----------------------------------------------------------
    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        out = _HEADER.to_json({k: v[k] for k in HEADER_FIELDS if k in v}, ctx)
        out["levels"] = [_bytes_json(x) for x in v.get("levels", [])]
        for key in ("fallback", "thumbnail", "tail"):
            if key in v:
                out[key] = _bytes_json(v[key])
        return out

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, dict):
            raise JsonFormatError("an NTF record is an object", path=jpath)
        unknown = set(o) - set(HEADER_FIELDS) - {"levels", "fallback", "thumbnail", "tail"}
        if unknown:
            raise JsonFormatError(f"unknown fields {sorted(unknown)} in an NTF record", path=jpath)
        rec = _HEADER.from_json({k: o[k] for k in HEADER_FIELDS if k in o}, ctx, jpath)
        for k in HEADER_FIELDS:
            if k not in rec:
                raise JsonFormatError("missing field", path=f"{jpath}.{k}")
        levels = o.get("levels")
        if not isinstance(levels, list):
            raise JsonFormatError("levels must be a list of hex strings", path=f"{jpath}.levels")
        rec["levels"] = [hex_to_bytes(x, f"{jpath}.levels[{i}]") for i, x in enumerate(levels)]
        for key in ("fallback", "thumbnail", "tail"):
            if key in o:
                rec[key] = hex_to_bytes(o[key], f"{jpath}.{key}")
        return rec

    def opaque_size(self, v: Any) -> int:
        """Bytes not decoded into pixels: a raw tail, the whole payload of an
        unknown format, and version-7 ciphertext counts as decoded."""
        return len(v.get("tail", b""))


#: the ``ntf`` storage of the KO wire layout (gtd lightmaps): rule-sized payload
NTF_STORAGE = NtfStorage(standalone=False)
#: a whole ``.dxt`` file: main levels, then the rest of the file
NTF_FILE_STORAGE = NtfStorage(standalone=True)


def decode_record(data: bytes, pos: int = 0, *, standalone: bool = False,
                  warnings: list | None = None) -> tuple[dict, int]:
    """Decode one NTF record at ``pos``; returns (record, end offset)."""
    r = Reader(data, pos)
    s = Scope({}, r, r.limits, warnings if warnings is not None else [])
    storage = NTF_FILE_STORAGE if standalone else NTF_STORAGE
    try:
        rec = storage.decode(r, s)
    except FormatError as e:
        if e.offset is None:
            e.offset = r.pos
        raise
    return rec, r.pos


def encode_record(rec: dict, *, standalone: bool = False) -> bytes:
    w = Writer()
    (NTF_FILE_STORAGE if standalone else NTF_STORAGE).encode(w, rec, Scope({}, None))
    return w.getvalue()
