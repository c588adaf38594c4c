"""The two FBX codecs: ``fbx`` (binary) and ``fbx-ascii``.

Both decode to the same :class:`FbxNode` tree in ``Document.root``; the
binary one keeps header and footer decisions in ``Document.params`` and an
unrecognised tail (pre-7000 sections, odd footers) in ``Document.trailing``.
"""
from __future__ import annotations

import struct
from typing import Any

from ...core.errors import EncodeError, FormatError, JsonFormatError
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.spans import SpanMap
from ...document import Document
from ...registry import ByteSequence, Codec, Option, Signature
from . import ascii as fbx_ascii
from . import binary as fbx_binary
from .info import fbx_info
from .jsonform import tree_from_json, tree_to_json
from .model import FbxArray



class _FbxCodec(Codec):
    family = "fbx"
    extensions = (".fbx",)

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        if form not in ("wire", "readable"):
            raise JsonFormatError(f"unknown JSON form {form!r}", path="$.form")
        return self.json_envelope(doc, form, tree_to_json(doc.root, form))

    def _envelope(self, obj: dict) -> tuple[str, dict, bytes, dict]:
        """The checked envelope (the registry's one reader of it) as FBX uses it."""
        env = self.parse_envelope(obj)
        return env.ctx.form, env.params, env.trailing, env.meta

    def info(self, doc: Document) -> dict:
        return fbx_info(doc, self.name, self.family)

    def convert(self, doc: Document, target: str, options: dict | None = None) -> bytes:
        from .upgrade import convert_document
        return convert_document(doc, target, options or {})

    #: what :func:`potsherd.formats.fbx.scene.to_scene` reads (``source_path``
    #: is set by the exporter from the document, not by the user)
    export_options = (
        Option("data_root", str, "folder searched (case-insensitively) for external texture "
               "files not found beside the FBX"),
        Option("keep_units", bool, "keep FBX units (centimetres for most exporters) instead "
               "of scaling to metres", False),
        Option("name", str, "name of the glTF scene", "fbx"),
    )

    def to_scene(self, doc: Document, **options: Any):
        from .scene import to_scene
        return to_scene(doc, **options)

    #: ``from_scene`` options (glTF or another family into FBX)
    import_options = (
        Option("version", int, "FBX version to write, 7100-7700", 7400),
        Option("fps", float, "frame rate of resampled rotations/cubic keys and TimeMode", 30.0),
        Option("embed_textures", bool, "put image bytes inside the file (Video Content)", True),
    )

    def from_scene(self, scene: Any, *, like: Document | None = None, out_name: str = "",
                   out_dir: str = "", **options: Any) -> Document:
        """The scene as FBX 7.x (this codec's encoding), see :mod:`.importing`.
        With ``like`` (an FBX), a scene that draws and plays what the original
        exports to gives back the original (``scene.compare``): an unedited
        round trip, through Blender too, is byte-exact."""
        from .importing import scene_to_fbx
        if like is not None and like.format in ("fbx", "fbx-ascii"):
            why = _like_difference(scene, like)
            if why is None:
                doc = like.codec.decode(like.codec.encode(like))
                doc.warnings = []
                return doc
            scene.warnings.append(f"differs from the original ({why}): written anew from the "
                                  "glTF; what only the original FBX holds is not kept")
        from ...scene.import_prep import Holds, prepare
        scene = prepare(scene, Holds("fbx", normals=True, vertex_colors=True, morph_targets=True))
        return scene_to_fbx(scene, version=int(options.get("version") or 7400),
                            binary=self.name == "fbx", fps=float(options.get("fps") or 30.0),
                            embed_textures=bool(options.get("embed_textures", True)))


def _like_difference(scene: Any, like: Document) -> str | None:
    """None when ``scene`` shows what ``like`` exports to (in metres, or in its
    own units when the export kept them), else the first difference."""
    from ...scene.compare import scene_difference
    from ...scene.model import unique_labels
    from .scene import to_scene
    why = "the original does not export"
    for options in ({}, {"keep_units": True}):
        try:
            ref = to_scene(like, source_path=like.source, **options)
        except FormatError:
            continue
        for items in (ref.nodes, ref.animations):      # named as the glTF writer names them
            for x, name in zip(items, unique_labels([x.name for x in items], digits=3)):
                x.name = name
        found = scene_difference(scene, ref)
        if found is None:
            return None
        why = found if not options else why       # (the metre export's reason first)
    return why


class FbxBinaryCodec(_FbxCodec):
    name = "fbx"
    description = "Autodesk FBX, binary (header versions 3000-7700, either byte order)"
    magic = fbx_binary.MAGIC
    parameters = ("inflate",)
    #: the byte-order byte (offset 22) and the version word after it, by layout:
    #: node records with 32-bit offsets before 7500, 64-bit from it; other
    #: versions match the magic alone
    signatures = (
        *(Signature(str(v), (ByteSequence(0, fbx_binary.MAGIC),
                             ByteSequence(22, bytes([big]) + v.to_bytes(4, order))), group)
          for group, versions in (("3000-7400", (3000, 5000, 5800, 6000, 6100, 7000, 7099,
                                                 7100, 7200, 7300, 7400)),
                                  ("7500-7700", (7500, 7600, 7700)))
          for v in versions for big, order in ((0, "little"), (1, "big"))),
        Signature("", (ByteSequence(0, fbx_binary.MAGIC),)),
    )

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        """``inflate="eager"`` inflates (and so checks) every compressed array now
        instead of on first access."""
        return self._decode(data, limits, params, None)

    def decode_spans(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any):
        spans = SpanMap()
        return self._decode(data, limits, params, spans), spans

    def _decode(self, data: bytes, limits: Limits, params: dict, spans: Any) -> Document:
        root, p, tail = fbx_binary.decode_binary(data, limits, spans)
        if params.get("inflate", "lazy") == "eager":
            for path, node in root.walk():
                for i, (code, v) in enumerate(node.props):
                    if isinstance(v, FbxArray):
                        try:
                            v.values
                        except FormatError as e:
                            raise e.prepend(f"props[{i}]").prepend(
                                "/" + "/".join(x.decode("latin-1") for x in path))
        warnings = []
        if tail:
            warnings.append(f"{len(tail)} bytes after the top-level null record kept raw "
                            f"(footer or pre-7000 section)")
        return Document(self.name, root, p, tail, warnings)

    def encode(self, doc: Document) -> bytes:
        try:
            return fbx_binary.encode_binary(doc.root, doc.params, bytes(doc.trailing))
        except (struct.error, TypeError, ValueError, OverflowError, AttributeError) as e:
            raise EncodeError(f"cannot write this FBX tree: {type(e).__name__}: {e}") from None

    def from_json(self, obj: dict) -> Document:
        form, params, trailing, meta = self._envelope(obj)
        params.setdefault("version", 7400)
        for k, lo, hi in (("version", 0, 1 << 32), ("endian_byte", 0, 256), ("byte21", 0, 256)):
            v = params.get(k, lo)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v < hi:
                raise JsonFormatError(f"{k} must be an integer in [{lo}, {hi})",
                                      path=f"$.params.{k}")
        if params.get("footer", "raw") not in ("sdk", "blender", "raw"):
            raise JsonFormatError("footer must be sdk, blender or raw", path="$.params.footer")
        if not isinstance(params.get("terminated", True), bool):
            raise JsonFormatError("terminated must be a boolean", path="$.params.terminated")
        if "trailing" not in obj:  # a tree written from scratch
            params.setdefault("footer", "sdk")
            params.setdefault("file_id", "derived")
        root = tree_from_json(obj.get("root"), bool(params.get("endian_byte", 0)),
                              form=form)
        return Document(self.name, root, params, trailing, [], meta)


class FbxAsciiCodec(_FbxCodec):
    name = "fbx-ascii"
    description = "Autodesk FBX, ASCII (5.x, 6.x, 7.x), byte-exact"
    magic = b"; FBX"

    #: the "; FBX" comment line (after a byte-order mark), else the header node's name
    signatures = (Signature("", (ByteSequence(0, b"; FBX", 3),)),
                  Signature("", (ByteSequence(0, b"FBXHeaderExtension:", 4096),)))

    def sniff(self, data: bytes) -> bool:
        return fbx_ascii.sniff_ascii(data)

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        root, p = fbx_ascii.decode_ascii(data, limits)
        return Document(self.name, root, p, b"", [])

    def encode(self, doc: Document) -> bytes:
        try:
            return fbx_ascii.encode_ascii(doc.root, doc.params) + bytes(doc.trailing)
        except (TypeError, ValueError, AttributeError, IndexError, UnicodeError) as e:
            raise EncodeError(f"cannot write this ASCII FBX tree: {type(e).__name__}: {e}") \
                from None

    def from_json(self, obj: dict) -> Document:
        form, params, trailing, meta = self._envelope(obj)
        for k in ("newline", "indent"):
            if k in params and not isinstance(params[k], str):
                raise JsonFormatError(f"{k} must be a string", path=f"$.params.{k}")
        root = tree_from_json(obj.get("root"), False, form=form)
        return Document(self.name, root, params, trailing, [], meta)

    def opaque_bytes(self, doc: Document) -> int:
        return len(doc.trailing)


CODECS = [FbxBinaryCodec(), FbxAsciiCodec()]
