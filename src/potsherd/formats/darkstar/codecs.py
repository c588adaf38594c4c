"""The ``dts`` and ``dml`` codecs: one top-level PERS block plus trailing bytes."""
from __future__ import annotations

import struct
from typing import Any

from ...core.errors import FormatError, JsonFormatError, MagicError
from ...core.expr import Scope
from ...core.layout import JsonCtx
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.stream import Reader, Writer
from ...document import Document
from ...registry import Codec
from .pers import BLOCK, TAG


def describe_non_pers(data: bytes) -> str:
    """Why ``data`` is not a PERS file, naming what it looks like instead."""
    if len(data) < 4:
        return f"not a Darkstar PERS file: only {len(data)} bytes"
    what = f"not a Darkstar PERS file: it starts with {data[:4].hex(' ')}"
    if len(data) >= 8:
        btype, bver, bsize = struct.unpack_from("<HHI", data)
        if bver == 0x0014 or bsize == len(data) - 8:
            what += (f": it looks like an older 3Space 2.x block file (block type "
                     f"0x{btype:04X}, tag 0x{bver:04X}, size {bsize}), which this codec does not read")
    return what


class DarkstarCodec(Codec):
    """A file holding one top-level PERS block (shape or material list)."""

    family = "darkstar"
    magic = TAG

    def __init__(self, name: str, extensions: tuple[str, ...], description: str) -> None:
        self.name = name
        self.extensions = extensions
        self.description = description

    # --- bytes ----------------------------------------------------------
    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        if not data.startswith(TAG):
            raise MagicError(describe_non_pers(data), offset=0, expected=TAG.hex(),
                             found=data[:4].hex())
        r = Reader(data, limits=limits)
        warnings: list[str] = []
        s = Scope(dict(params), r, limits, warnings)
        try:
            root = BLOCK.decode(r, s)
        except FormatError as e:
            if e.offset is None:
                e.offset = r.pos
            raise e.prepend("block")
        trailing = r.tail()
        if trailing:
            warnings.append(f"{len(trailing)} bytes after the top-level PERS block "
                            f"(offset {len(data) - len(trailing)}) kept raw")
        return Document(self.name, root, {}, trailing, warnings)

    def encode(self, doc: Document) -> bytes:
        w = Writer()
        try:
            BLOCK.encode(w, doc.root, Scope(dict(doc.params), None, DEFAULT_LIMITS))
        except FormatError as e:
            raise e.prepend("block")
        return w.getvalue() + bytes(doc.trailing)

    # --- JSON -----------------------------------------------------------
    def to_json(self, doc: Document, form: str = "wire") -> dict:
        ctx = JsonCtx(form, doc.meta.get("text_encoding", self.text_encoding))
        return self.json_envelope(doc, form, BLOCK.to_json(doc.root, ctx))

    def from_json(self, obj: dict) -> Document:
        meta = obj.get("meta") or {}
        if not isinstance(meta, dict):
            raise JsonFormatError("meta must be an object", path="$.meta")
        try:
            ctx = JsonCtx(obj.get("form", "wire"), meta.get("text_encoding", self.text_encoding))
        except ValueError as e:
            raise JsonFormatError(str(e), path="$.form") from None
        params = obj.get("params") or {}
        if not isinstance(params, dict):
            raise JsonFormatError("params must be an object", path="$.params")
        try:
            trailing = bytes.fromhex(obj.get("trailing", ""))
        except (TypeError, ValueError):
            raise JsonFormatError("trailing must be a hex string", path="$.trailing") from None
        root = BLOCK.from_json(obj.get("root"), ctx, "$.root")
        return Document(self.name, root, dict(params), trailing, [], dict(meta))

    # --- reports --------------------------------------------------------
    def opaque_bytes(self, doc: Document) -> int:
        return len(doc.trailing) + BLOCK.opaque_size(doc.root)

    def info(self, doc: Document) -> dict:
        from .info import block_info
        return {"format": self.name, "family": self.family, **block_info(doc.root)}



class ShapeCodec(DarkstarCodec):
    """``.dts``: shapes also export to glTF (:mod:`.scene`)."""

    from .textures import SHAPE_TEXTURE_OPTIONS as export_options  # noqa: E402 (palette=FILE)

    def to_scene(self, doc: Document, **options: Any):
        from .scene import to_scene
        return to_scene(doc, **options)


DTS = ShapeCodec("dts", (".dts",), "Darkstar 3Space shape (PERS TS::Shape, v2-v8)")
DML = DarkstarCodec("dml", (".dml",), "Darkstar material list (PERS TS::MaterialList, v2-v4)")

CODECS = [DTS, DML]
