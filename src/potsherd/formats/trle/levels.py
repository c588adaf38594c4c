"""Codecs of the Tomb Raider levels TR1-TR5 (``layouts/levels.layout``).

Detected by the version word (TR1 0x20, TR2 0x2D, TR3 0xFF180038/0xFF080038,
TR4/TR5 "TR4\\0" or TRNG's "TR4c") and, for "TR4\\0", by the chunk walk:
after its three texture chunks a TR4 level holds a zlib chunk of level data,
a TR5 level (whatever its extension: TRNG keeps ``.tr4``) 32 bytes of
Lara-type/weather words and an uncompressed level chunk.
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ...core.errors import FormatError, MagicError
from ...core.limits import DEFAULT_LIMITS, Limits
from ...document import Document
from ...registry import LayoutCodec, Option
from . import trng
from .layouts import _LayoutFiles
from .levelstore import level_data, level_storages  # noqa: F401  (level_data: also imported from here)
from ...core.layout import Layout

TR3_VERSIONS = (0xFF180038, 0xFF080038)

LEVEL_EXPORT_OPTIONS = (
    Option("unit_scale", float, "metres per TR unit (default 1/512)", 1.0 / 512.0),
    Option("rooms", bool, "export the rooms (default 1)", True),
    Option("objects", bool, "export static meshes and items (default 1)", True),
    Option("room", int, "export this room only"),
    Option("animated", bool, "items as skinned moveables with all their animations "
           "(default 0: posed in their starting keyframe)", False),
)


def _make_level_layout() -> Layout:
    storages = level_storages()
    layout = Layout(_LayoutFiles(("levels.layout",)), storages)
    for st in storages.values():
        if hasattr(st, "layout"):
            st.layout = layout
    return layout


LEVEL_LAYOUT = _make_level_layout()


def tr4_engine(data: bytes) -> str | None:
    """"tr4" or "tr5" for a "TR4\\0"/"TR4c" level (by the chunk walk), else None."""
    if data[:4] not in (b"TR4\x00", b"TR4c"):
        return None
    if data[3:4] == b"c":
        try:
            data = trng.decrypt(data)
        except FormatError:
            return None
    p = 10
    for _ in range(3):
        if p + 8 > len(data):
            return None
        p += 8 + int.from_bytes(data[p + 4:p + 8], "little")
    if p + 10 > len(data):
        return None
    cmf, flg = data[p + 8], data[p + 9]
    if cmf & 0x0F == 8 and (cmf * 256 + flg) % 31 == 0:
        return "tr4"
    if p + 40 <= len(data) and data[p + 32:p + 36] == data[p + 36:p + 40]:
        return "tr5"
    return None


class LevelCodec(LayoutCodec):
    """One engine's level: a layout root plus detection, TRNG encryption and a summary."""

    def __init__(self, name: str, root: str, *, extensions: tuple[str, ...], magic: bytes,
                 description: str, engine: int) -> None:
        variants = [{"demo": 0}, {"demo": 1}] if engine == 1 else None
        super().__init__(name, LEVEL_LAYOUT, root, family="trle", extensions=extensions,
                         magic=magic, description=description, allow_trailing=False,
                         variants=variants, parameters=("demo",) if engine == 1 else ())
        self.engine = engine

    # --- detection --------------------------------------------------
    @property
    def signatures(self) -> tuple:
        """The version words ``version_ok`` accepts, as identifier signatures
        (TR4 and TR5 share "TR4\\0" and TRNG's "TR4c": their chunks tell them apart)."""
        from ...registry import ByteSequence, Signature
        words = {1: (0x20,), 2: (0x2D,), 3: TR3_VERSIONS}.get(self.engine)
        heads = ([w.to_bytes(4, "little") for w in words] if words is not None
                 else [b"TR4\x00", b"TR4c"])
        return tuple(Signature("", (ByteSequence(0, h),)) for h in heads)

    def version_ok(self, data: bytes) -> bool:
        v = int.from_bytes(data[:4], "little") if len(data) >= 4 else None
        if self.engine == 1:
            return v == 0x20
        if self.engine == 2:
            return v == 0x2D
        if self.engine == 3:
            return v in TR3_VERSIONS
        return tr4_engine(data) == f"tr{self.engine}"

    def sniff(self, data: bytes) -> bool:
        return self.version_ok(data)

    # --- bytes ------------------------------------------------------
    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        params.pop("encrypted", None)
        plain, encrypted = self._plain(data)
        doc = super().decode(plain, limits=limits, **params)
        if encrypted:
            doc.params["encrypted"] = 1
        doc.warnings.extend(level_warnings(self.engine, doc.root))
        return doc

    def _plain(self, data: bytes) -> tuple[bytes, bool]:
        if not self.version_ok(data):
            found = data[:4].hex()
            raise MagicError(f"not a TR{self.engine} level (version word {found})", offset=0,
                             expected=self.describe_version(), found=found)
        if self.engine >= 4 and trng.is_encrypted(data):
            return trng.decrypt(data), True
        return data, False

    def describe_version(self) -> str:
        return {1: "20000000", 2: "2d000000", 3: "380018ff or 380008ff"}.get(
            self.engine, "'TR4\\0' or 'TR4c'")

    def encode(self, doc: Document) -> bytes:
        params = {k: v for k, v in doc.params.items() if k != "encrypted"}
        out = self.layout.encode(self.root, doc.root, params) + bytes(doc.trailing)
        if doc.params.get("encrypted"):
            out = trng.encrypt(out)
        return out

    def decode_spans(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any):
        plain, _ = self._plain(data)
        doc, spans = super().decode_spans(plain, limits=limits, **params)
        if trng.is_encrypted(data):
            doc.params["encrypted"] = 1
        return doc, spans

    export_options = LEVEL_EXPORT_OPTIONS

    def to_scene(self, doc: Document, **options: Any):
        from ...registry import coerce_options
        from .levelscene import to_scene
        options.pop("source_path", None)
        opts = coerce_options(LEVEL_EXPORT_OPTIONS, options, what="level export")
        return to_scene(doc, **{k: v for k, v in opts.items() if v is not None})

    # --- summary ----------------------------------------------------
    def info(self, doc: Document) -> dict:
        r = doc.root
        data = level_data(r)
        out: dict[str, Any] = {"format": self.name, "family": self.family, "engine": f"TR{self.engine}"}
        if self.engine <= 3:
            out["version"] = f"0x{r['version']:08X}"
            out["textiles"] = r["textile_count"]
        else:
            out["textiles"] = {"room": r["room_textile_count"], "object": r["object_textile_count"],
                               "bump": r["bump_textile_count"]}
            out["encrypted"] = bool(doc.params.get("encrypted"))
            out["samples"] = r["sample_count"]
            if self.engine == 4:
                out["zlib"] = {k: r[k]["zlib"] for k in ("textiles32", "textiles16", "misc_textiles", "level")}
            else:
                out["zlib"] = {k: r[k]["zlib"] for k in ("textiles32", "textiles16", "misc_textiles")}
        for key, label in (("room_count", "rooms"), ("floor_data_count", "floor_data_words"),
                           ("mesh_pointer_count", "mesh_pointers"), ("animation_count", "animations"),
                           ("state_change_count", "state_changes"), ("dispatch_count", "dispatches"),
                           ("moveable_count", "moveables"), ("static_count", "static_meshes"),
                           ("object_texture_count", "object_textures"),
                           ("sprite_texture_count", "sprite_textures"),
                           ("sprite_sequence_count", "sprite_sequences"), ("camera_count", "cameras"),
                           ("flyby_camera_count", "flyby_cameras"),
                           ("sound_source_count", "sound_sources"), ("box_count", "boxes"),
                           ("item_count", "items"), ("ai_object_count", "ai_objects"),
                           ("sound_detail_count", "sound_details"),
                           ("sample_index_count", "sample_indices")):
            if key in data:
                out[label] = int(data[key])
        meshes = data.get("meshes")
        if meshes is None:
            out["level"] = "raw (did not parse)"
        else:
            out["meshes"] = "raw" if isinstance(meshes, (bytes, bytearray)) else len(meshes)
        return out


def level_warnings(engine: int, root: dict) -> list[str]:
    out = []
    data = level_data(root)
    if isinstance(root.get("level"), (bytes, bytearray)):
        out.append("the level chunk did not parse; kept raw")
        return out
    if not data:
        out.append("the level chunk did not parse; kept raw")
        return out
    for i, room in enumerate(data.get("rooms", [])):
        body = room.get("body", room.get("data"))
        if isinstance(body, (bytes, bytearray)):
            out.append(f"room {i}: geometry kept raw (did not parse)")
    if isinstance(data.get("meshes"), (bytes, bytearray)):
        out.append("the mesh words did not parse as meshes; kept raw")
    for name in ("sprite_marker", "texture_marker"):
        if name in data and bytes(data[name]).rstrip(b"\x00") not in (b"SPR", b"TEX"):
            out.append(f"{name} is {bytes(data[name])!r}")
    return out


CODECS = [
    LevelCodec("tr1level", "tr1level", extensions=(".phd",), magic=b"\x20\x00\x00\x00",
               description="Tomb Raider 1 level (.PHD, version 0x20)", engine=1),
    LevelCodec("tr2level", "tr2level", extensions=(".tr2",), magic=b"\x2d\x00\x00\x00",
               description="Tomb Raider 2 level (.TR2, version 0x2D)", engine=2),
    LevelCodec("tr3level", "tr3level", extensions=(".tr2",), magic=b"\x38\x00\x18\xff",
               description="Tomb Raider 3 level (.TR2, version 0xFF180038 / 0xFF080038)", engine=3),
    LevelCodec("tr4level", "tr4level", extensions=(".tr4", ".trc"), magic=b"TR4\x00",
               description="Tomb Raider 4 / TRLE level (.TR4; TRNG 'TR4c' encrypted too)", engine=4),
    LevelCodec("tr5level", "tr5level", extensions=(".trc", ".tr4"), magic=b"TR4\x00",
               description="Tomb Raider 5 level (.TRC; TRNG 'TR4c' encrypted too)", engine=5),
]
