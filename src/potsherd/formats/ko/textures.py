"""Knight Online texture files: ``.dxt`` (one NTF record) and ``.gtt`` (a
sequence of NTF records), with PNG extraction.

Document roots
--------------
* ``dxt``: the NTF record dict of :mod:`.ntf` (standalone form: the bytes
  after the main levels are ``fallback`` + ``thumbnail`` when they follow the
  writer's rule, else a raw ``tail``).  A Targa image renamed ``.dxt`` (starts
  ``00 00 02``, no ``NTF`` after the name) is kept whole as ``{"tga": bytes}``.
* ``gtt``: ``{"textures": [record, ...]}``, NTF records back to back until the
  end of the file, each with the rule-sized payload.

JSON: both forms store every byte blob (levels, fallback, thumbnail, tail,
tga) as lowercase hex; the name string is hex in ``wire`` and text (cp949,
else ``{"hex": ...}``) in ``readable``.  Version-7 levels stay ciphertext in
the document and in JSON; they are decrypted only to make images.
"""
from __future__ import annotations

import io
import os
import struct
from typing import Any

from ...core.errors import (EncodeError, FormatError, JsonFormatError, MagicError,
                            TruncatedError, ValueFormatError)
from ...core.expr import Scope
from ...core.layout import JsonCtx, hex_to_bytes, text_or_hex
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.stream import Reader, Writer
from ...document import Document
from ...imaging import decode_bc1, decode_bc2, decode_bc3, decode_pixels, rgba_to_image, rgba_to_png
from ...registry import Codec
from . import ntf
from .ntf import (ENCRYPTED_VERSION, FOURCC_DXT1, FOURCC_DXT2, FOURCC_DXT3, FOURCC_DXT4,
                  FOURCC_DXT5, NTF_FILE_STORAGE, NTF_STORAGE, format_name)

TEXT_ENCODING = "cp949"
_I32 = struct.Struct("<i")


# ----------------------------------------------------------------------------
# pixels


def record_rgba(rec: dict):
    """Level 0 of an NTF record as an RGBA ``(h, w, 4)`` array.

    Raises :class:`ValueFormatError` for formats without a decoder (they are
    reported, never guessed) and for payloads that do not fit the size."""
    levels = ntf.plain_levels(rec)
    fmt, w, h = rec["format"], rec["width"], rec["height"]
    if not levels:
        raise ValueFormatError(f"no main level to decode (format {format_name(fmt)})", found=fmt)
    data = levels[0]
    if fmt == FOURCC_DXT1:
        return decode_bc1(data, w, h)
    if fmt in (FOURCC_DXT2, FOURCC_DXT3):  # DXT2 is premultiplied; stored values are returned
        return decode_bc2(data, w, h)
    if fmt in (FOURCC_DXT4, FOURCC_DXT5):
        return decode_bc3(data, w, h)
    if fmt in ntf.PIXEL_BYTES:
        return decode_pixels(data, w, h, format_name(fmt))
    raise ValueFormatError(f"pixel format {format_name(fmt)} is not supported; kept raw", found=fmt)


def _stem(path: str | None, fallback: bytes) -> str:
    if path:
        return os.path.splitext(os.path.basename(path))[0]
    name = bytes(fallback).split(b"\0", 1)[0].decode(TEXT_ENCODING, "replace")
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    return os.path.splitext(name)[0] or "texture"


def record_info(rec: dict) -> dict:
    """The ``info`` summary of one NTF record."""
    levels = rec.get("levels", [])
    out = {
        "name": text_or_hex(bytes(rec["name"]), JsonCtx("readable", TEXT_ENCODING)),
        "version": rec["version"],
        "encrypted": rec["version"] == ENCRYPTED_VERSION,
        "width": rec["width"],
        "height": rec["height"],
        "pixel_format": format_name(rec["format"]),
        "mipmap": rec["mipmap"],
        "mip_count": len(levels),
        "main_bytes": sum(len(x) for x in levels),
    }
    if "tail" in rec:  # bytes after the main levels, not following the payload rule
        out["tail_bytes"] = len(rec["tail"])
        out["tail_follows_rule"] = False
    else:
        out["fallback_bytes"] = len(rec.get("fallback", b""))
        out["thumbnail_bytes"] = len(rec.get("thumbnail", b""))
        out["tail_bytes"] = out["fallback_bytes"] + out["thumbnail_bytes"]
        out["tail_follows_rule"] = True
    return out


# ----------------------------------------------------------------------------
# shared codec plumbing


class _TextureCodec(Codec):
    family = "ko"
    text_encoding = TEXT_ENCODING

    def _scope(self, r: Reader | None, limits: Limits, warnings: list) -> Scope:
        return Scope({}, r, limits, warnings)

    def _envelope_in(self, obj: dict) -> tuple[JsonCtx, dict, Any]:
        """The shared envelope; a texture document has no parameters and no
        trailing bytes (decoding never makes them), so either is refused
        rather than dropped."""
        env = self.parse_envelope(obj)
        if env.params:
            raise JsonFormatError(f"{self.name} takes no parameters (got {sorted(env.params)})",
                                  path="$.params")
        if env.trailing:
            raise JsonFormatError(f"{self.name} documents keep no trailing bytes", path="$.trailing")
        return env.ctx, env.meta, obj.get("root")

    def convert(self, doc: Document, target: str, options: dict | None = None) -> bytes:
        """``png``: the first texture's level 0."""
        if target != "png":
            raise FormatError(f"{self.name} converts to png only, not {target!r}")
        images = self.textures(doc)
        if not images:
            raise FormatError("no decodable texture: " + "; ".join(doc.warnings[-1:]))
        buf = io.BytesIO()
        images[0][1].save(buf, format="PNG")
        return buf.getvalue()


# ----------------------------------------------------------------------------
# .dxt


def _looks_like_tga(data: bytes) -> bool:
    return data[:3] == b"\x00\x00\x02"


class DxtCodec(_TextureCodec):
    """One NTF record as a file (plus whatever follows its main levels)."""

    name = "dxt"
    description = "Knight Online NTF texture (.dxt): DXT1/3/5 or 16/32-bit pixels, NTF3 and NTF7"
    extensions = (".dxt",)

    def sniff(self, data: bytes) -> bool:
        if len(data) < 4:
            return False
        at = 4 + max(_I32.unpack_from(data)[0], 0)  # a length <= 0 reads no name bytes
        return data[at:at + 3] == ntf.NTF_MAGIC

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        if params:
            raise FormatError(f"dxt takes no parameters (got {sorted(params)})")
        warnings: list[str] = []
        if not self.sniff(data):
            if _looks_like_tga(data):
                warnings.append("not an NTF record: a Targa image renamed .dxt, kept opaque")
                return Document(self.name, {"tga": bytes(data)}, {}, b"", warnings,
                                {"text_encoding": TEXT_ENCODING})
            if len(data) < 4:
                raise TruncatedError("input ends inside the name length", offset=0,
                                     expected=4, found=len(data))
            n = _I32.unpack_from(data)[0]
            if n > len(data) - 4:
                raise TruncatedError(f"name of {n} bytes exceeds the {len(data) - 4} bytes left",
                                     offset=0, path="ntf.name", expected=f"<= {len(data) - 4}",
                                     found=n)
            at = 4 + max(n, 0)
            raise MagicError("not an NTF record (and not a Targa image)", offset=at,
                             path="ntf.id", expected=ntf.NTF_MAGIC.hex(),
                             found=data[at:at + 3].hex())
        r = Reader(data, 0, limits=limits)
        try:
            rec = NTF_FILE_STORAGE.decode(r, self._scope(r, limits, warnings))
        except FormatError as e:
            if e.offset is None:
                e.offset = r.pos
            raise e.prepend("ntf")
        return Document(self.name, rec, {}, b"", warnings, {"text_encoding": TEXT_ENCODING})

    def encode(self, doc: Document) -> bytes:
        root = doc.root
        if isinstance(root, dict) and "tga" in root:
            if set(root) != {"tga"} or not isinstance(root["tga"], (bytes, bytearray)):
                raise EncodeError("an opaque Targa document is {\"tga\": bytes} only", path="tga")
            return bytes(root["tga"]) + bytes(doc.trailing)
        w = Writer()
        try:
            NTF_FILE_STORAGE.encode(w, root, self._scope(None, DEFAULT_LIMITS, []))
        except FormatError as e:
            raise e.prepend("ntf")
        return w.getvalue() + bytes(doc.trailing)

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        ctx = JsonCtx(form, doc.meta.get("text_encoding", self.text_encoding))
        root = doc.root
        if isinstance(root, dict) and "tga" in root:
            j = {"tga": bytes(root["tga"]).hex()}
        else:
            j = NTF_FILE_STORAGE.to_json(root, ctx)
        return self.json_envelope(doc, form, j)

    def from_json(self, obj: dict) -> Document:
        ctx, meta, root = self._envelope_in(obj)
        if isinstance(root, dict) and "tga" in root:
            if set(root) != {"tga"}:
                raise JsonFormatError("an opaque Targa document has only \"tga\"", path="$.root")
            value: Any = {"tga": hex_to_bytes(root["tga"], "$.root.tga")}
        else:
            value = NTF_FILE_STORAGE.from_json(root, ctx, "$.root")
        return Document(self.name, value, {}, b"", [], dict(meta))

    def info(self, doc: Document) -> dict:
        root = doc.root
        if "tga" in root:
            return {"format": self.name, "family": self.family, "container": "tga",
                    "opaque_bytes": len(root["tga"])}
        return {"format": self.name, "family": self.family, **record_info(root)}

    def opaque_bytes(self, doc: Document) -> int:
        root = doc.root
        if "tga" in root:
            return len(root["tga"])
        return len(doc.trailing) + NTF_FILE_STORAGE.opaque_size(root)

    def textures(self, doc: Document) -> list:
        root = doc.root
        name = _stem(doc.source, root.get("name", b""))
        if "tga" in root:
            from PIL import Image
            try:
                im = Image.open(io.BytesIO(bytes(root["tga"])), formats=["TGA"])
                im.load()
            except Exception as e:  # noqa: BLE001 - Pillow raises many kinds
                doc.warnings.append(f"Targa image could not be read: {e}")
                return []
            return [(name, im.convert("RGBA"))]
        try:
            return [(name, rgba_to_image(record_rgba(root)))]
        except ValueFormatError as e:
            doc.warnings.append(f"{name}: no image: {e.message}")
            return []


# ----------------------------------------------------------------------------
# .gtt


class GttCodec(_TextureCodec):
    """Terrain tile textures: NTF records back to back until the end of file."""

    name = "gtt"
    description = "Knight Online terrain tile textures (.gtt): a sequence of NTF records"
    extensions = (".gtt",)

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        if params:
            raise FormatError(f"gtt takes no parameters (got {sorted(params)})")
        warnings: list[str] = []
        r = Reader(data, 0, limits=limits)
        s = self._scope(r, limits, warnings)
        records = []
        if not data:
            raise TruncatedError("empty input: a .gtt holds at least one NTF record", offset=0)
        while r.remaining:
            try:
                records.append(NTF_STORAGE.decode(r, s))
            except FormatError as e:
                if e.offset is None:
                    e.offset = r.pos
                raise e.prepend(f"[{len(records)}]").prepend("textures").prepend("gtt")
        return Document(self.name, {"textures": records}, {}, b"", warnings,
                        {"text_encoding": TEXT_ENCODING})

    def _records(self, root: Any) -> list:
        if not isinstance(root, dict) or set(root) != {"textures"} or \
                not isinstance(root["textures"], list):
            raise EncodeError("a gtt document is {\"textures\": [NTF record, ...]}")
        return root["textures"]

    def encode(self, doc: Document) -> bytes:
        w = Writer()
        s = self._scope(None, DEFAULT_LIMITS, [])
        for i, rec in enumerate(self._records(doc.root)):
            try:
                NTF_STORAGE.encode(w, rec, s)
            except FormatError as e:
                raise e.prepend(f"[{i}]").prepend("textures").prepend("gtt")
        return w.getvalue() + bytes(doc.trailing)

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        ctx = JsonCtx(form, doc.meta.get("text_encoding", self.text_encoding))
        recs = [NTF_STORAGE.to_json(x, ctx) for x in self._records(doc.root)]
        return self.json_envelope(doc, form, {"textures": recs})

    def from_json(self, obj: dict) -> Document:
        ctx, meta, root = self._envelope_in(obj)
        if not isinstance(root, dict) or set(root) != {"textures"} or \
                not isinstance(root["textures"], list):
            raise JsonFormatError("a gtt root is {\"textures\": [...]}", path="$.root")
        recs = [NTF_STORAGE.from_json(x, ctx, f"$.root.textures[{i}]")
                for i, x in enumerate(root["textures"])]
        return Document(self.name, {"textures": recs}, {}, b"", [], dict(meta))

    def info(self, doc: Document) -> dict:
        recs = self._records(doc.root)
        return {"format": self.name, "family": self.family, "count": len(recs),
                "textures": [record_info(x) for x in recs]}

    def opaque_bytes(self, doc: Document) -> int:
        return len(doc.trailing)

    def textures(self, doc: Document) -> list:
        stem = _stem(doc.source, b"")
        out = []
        for i, rec in enumerate(self._records(doc.root)):
            name = f"{stem}_{i}" if doc.source else f"{_stem(None, rec['name'])}_{i}"
            try:
                out.append((name, rgba_to_image(record_rgba(rec))))
            except ValueFormatError as e:
                doc.warnings.append(f"{name}: no image: {e.message}")
        return out


class TctCodec(GttCodec):
    """Zone colour maps (``.tct``): CLyTerrain::MakeGameColorMap writes and
    CN3Terrain::LoadColorMap reads the same NTF sequence as a ``.gtt`` (one
    texture per colour-map cell, x outer, z inner)."""

    name = "tct"
    description = "Knight Online zone colour map (.tct): a sequence of NTF records"
    extensions = (".tct",)


DXT = DxtCodec()
GTT = GttCodec()
TCT = TctCodec()
CODECS = [DXT, GTT, TCT]

__all__ = ["CODECS", "DXT", "GTT", "DxtCodec", "GttCodec", "record_rgba", "record_info",
           "rgba_to_png", "NTF_STORAGE"]
