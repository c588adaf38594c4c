"""The ``dts`` and ``dml`` codecs: one top-level PERS block plus trailing bytes."""
from __future__ import annotations

import functools
import struct
from typing import Any

from ...core.errors import FormatError, MagicError, ValueFormatError
from ...core.expr import Scope
from ...core.layout import JsonCtx
from ...core.spans import SpanMap
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.stream import Reader, Writer
from ...document import Document
from ...registry import Codec, Option, coerce_options
from .pers import BLOCK, TAG
from .textures import SHAPE_TEXTURE_OPTIONS


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

    def __init__(self, name: str, extensions: tuple[str, ...], description: str,
                 classes: tuple[str, ...] = ()) -> None:
        self.name = name
        self.extensions = extensions
        self.description = description
        #: the PERS classes a file of this format holds at its top (and nested)
        self.classes = classes

    @functools.cached_property
    def signatures(self) -> tuple:
        """One signature per top-level class and version this reader has a
        layout for: "PERS", the class name (an i16 length, the name, a pad to
        even) and the i32 version word after it; then "PERS" + class name alone
        for the versions kept raw (an identifier prefers the versioned entries).
        The top classes are ``class_names`` when the codec has them (interior
        parts), else the first of ``classes``."""
        from ...registry import ByteSequence, Signature
        tops = tuple(getattr(self, "class_names", ()) or (self.classes[0].encode("ascii"),))
        out: list = []
        for top in tops:
            name = len(top).to_bytes(2, "little") + top
            at = 10 + len(top) + (len(top) & 1)
            head = (ByteSequence(0, TAG), ByteSequence(8, name))
            # several top classes: each class's versions are entries of their own
            slug = "" if len(tops) == 1 else "-" + top.decode("ascii").lower().replace(":", "")
            out += [Signature(str(v), (*head, ByteSequence(at, v.to_bytes(4, "little"))),
                              f"{v}{slug}" if slug else "")
                    for v in sorted(v for (c, v) in BLOCK.payloads if c == top)]
            out.append(Signature("", head))
        return tuple(out)

    # --- bytes ----------------------------------------------------------
    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        return self._decode(data, limits, params, None)

    def decode_spans(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any):
        spans = SpanMap()
        return self._decode(data, limits, params, spans), spans

    def _decode(self, data: bytes, limits: Limits, params: dict, spans: Any) -> Document:
        if not data.startswith(TAG):
            raise MagicError(describe_non_pers(data), offset=0, expected=TAG.hex(),
                             found=data[:4].hex())
        r = Reader(data, limits=limits)
        warnings: list[str] = []
        s = Scope(dict(params), r, limits, warnings)
        s.spans = spans
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
        env = self.parse_envelope(obj)
        root = BLOCK.from_json(obj.get("root"), env.ctx, "$.root")
        return Document(self.name, root, env.params, env.trailing, [], env.meta)

    # --- reports --------------------------------------------------------
    def payload_records(self) -> list[str]:
        """The payload records of the classes this format holds, newest version first."""
        mine = [(self.classes.index(cls.decode()), -ver, rec.name)
                for (cls, ver), rec in BLOCK.payloads.items() if cls.decode() in self.classes]
        return [name for _, _, name in sorted(mine)]

    def layout_lines(self, field: str | None = None) -> list[str]:
        """``potsherd layout``: the payload records (every field with the line of
        structures.json declaring it), or the fields along ``field`` - an error's
        path (``block.payload.meshes[0].payload.verts.x``: the innermost
        payload's field, in the newest record having it) or
        one naming its record (``TS::Shape v7.nodes.fName``)."""
        from ...core import describe
        from .pers import LAYOUT
        roots = self.payload_records()
        if not field:
            return [line for r in roots for line in describe.record_tree(LAYOUT, r)]
        # an error's path runs through blocks: the field is in the innermost payload
        path = field.rsplit("payload.", 1)[-1] if "payload." in field else field
        head = path.split(".", 1)[0]
        tries = [head] if head in roots else roots
        first: FormatError | None = None
        for root in tries:
            try:
                return [root, *describe.field_report(LAYOUT, root, path)]
            except FormatError as e:
                first = first or e
        raise first or FormatError(f"no field named in {field!r}")


    def opaque_bytes(self, doc: Document) -> int:
        return len(doc.trailing) + BLOCK.opaque_size(doc.root)

    def info(self, doc: Document) -> dict:
        from .info import block_info
        return {"format": self.name, "family": self.family, **block_info(doc.root)}



def _typed(declared: tuple, options: dict) -> dict:
    """``options`` with the declared ones converted from command-line text (the
    others, such as the CLI's own arguments, pass unchanged)."""
    names = {o.name for o in declared}
    mine = {k: v for k, v in options.items() if k in names}
    try:
        typed = coerce_options(declared, mine, what="dts")
    except ValueError as e:
        raise ValueFormatError(str(e)) from None
    return {**options, **typed}


def _bitmap_options(beside: str) -> tuple:
    """The import options of the Phoenix bitmaps written beside a shape or list."""
    return (
        Option("palette", str, "palette (.ppl/.pal or ARCHIVE::member) to write the textures "
               f"as the game's bitmaps beside the {beside} (default: the first found in the "
               "output's game tree, writing only bitmaps not there yet; without any, they are "
               "named only)", None),
        Option("dither", bool, "Floyd-Steinberg dithering when the textures are drawn with the "
               "palette (default: each texel the nearest palette colour)", False),
    )


def _with_bitmaps(scene: Any, doc: Document, name: str, opts: dict, out_dir: str) -> Any:
    """``doc``, or ``[(name, doc), *bitmaps]`` when textures are written beside it."""
    from .importing import texture_bitmaps
    bitmaps = texture_bitmaps(scene, opts.get("palette"), out_dir,
                              dither=bool(opts.get("dither")))
    return [(name, doc), *bitmaps] if bitmaps else doc


class ShapeCodec(DarkstarCodec):
    """``.dts``: shapes also export to glTF (:mod:`.scene`)."""

    export_options = (
        Option("detail", int, "level of detail to export (index into the shape's details; "
               "-1 keeps every level)", 0),
        Option("bounds", bool, "also export the 'bounds' utility object", False),
        Option("skin", bool, "bind the meshes to a skeleton of the shape's nodes (default: on "
               "for shapes with several nodes and node animation); 0 keeps meshes on the nodes", None),
        *SHAPE_TEXTURE_OPTIONS,   # palette=FILE for the material bitmaps
        Option("data_root", str, "game data folder (or volumes) searched for the material "
               "bitmaps and palettes"),
    )

    def to_scene(self, doc: Document, **options: Any):
        from .scene import to_scene
        return to_scene(doc, **_typed(self.export_options, options))


    import_options = (
        Option("version", int, "shape version to write: 7 (Starsiege) or 8 (Tribes); "
               "default that of --like, else 8", None),
        Option("details", str, "comma-separated pixel sizes of the detail levels, largest first "
               "(default: the export's sizes, else 1); a glTF of one level gets the coarser ones "
               "made by vertex clustering", None),
        *_bitmap_options("shape"),
    )

    def from_scene(self, scene: Any, *, like: Document | None = None, out_name: str = "",
                   out_dir: str = "", **options: Any) -> Any:
        from .importing import prepared, shape_from_scene
        opts = _typed(self.import_options, options)
        scene = prepared(scene, like)     # (baked colours are bitmaps beside it too)
        doc = shape_from_scene(scene, like=like, version=opts.get("version"),
                               details=opts.get("details"))
        return _with_bitmaps(scene, doc, out_name or "shape.dts", opts, out_dir)


class MaterialListCodec(DarkstarCodec):
    """``.dml``: material lists can be written from a glTF's materials."""

    import_options = (
        Option("version", int, "material list version: 2, 3 or 4 (default that of --like, "
               "else 4)", None),
        *_bitmap_options("list"),
    )

    def from_scene(self, scene: Any, *, like: Document | None = None, out_name: str = "",
                   out_dir: str = "", **options: Any) -> Any:
        from .importing import matlist_from_scene
        opts = _typed(self.import_options, options)
        doc = matlist_from_scene(scene, like=like, version=opts.get("version"))
        return _with_bitmaps(scene, doc, out_name or "materials.dml", opts, out_dir)


DTS = ShapeCodec("dts", (".dts",), "Darkstar 3Space shape (PERS TS::Shape, v2-v8)",
                 ("TS::Shape", "TS::CelAnimMesh", "TS::MaterialList"))
DML = MaterialListCodec("dml", (".dml",), "Darkstar material list (PERS TS::MaterialList, v2-v4)",
                        ("TS::MaterialList",))

CODECS = [DTS, DML]
