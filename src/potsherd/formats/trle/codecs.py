"""Codecs of the TR4 WAD family and WadMerger's ``.trwad``."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.errors import FormatError, JsonFormatError, MagicError
from ...core.layout import JsonCtx, text_or_hex, text_or_hex_back
from ...core.limits import DEFAULT_LIMITS, Limits
from ...document import Document
from ...registry import ByteSequence, Codec, LayoutCodec, Signature
from . import model
from .catalog import moveable_name
from .info import sfx_info, swd_info, text_list_info, trwad_info, wad_info
from .model import animation_ranges  # noqa: F401  (also imported from here)
from .options import EXPORT_OPTIONS, IMPORT_OPTIONS
from .layouts import SFX_LAYOUT, SWD_LAYOUT, TRWAD_LAYOUT, WAD_LAYOUT
from .polytable import PolygonColumns

TRWAD_VERSION = 170


def _u32(data: bytes) -> int | None:
    return int.from_bytes(data[:4], "little") if len(data) >= 4 else None


# --------------------------------------------------------------------------
# WAD


class WadCodec(LayoutCodec):
    """TR4 ``.wad`` (versions 129 and 130)."""

    export_options = EXPORT_OPTIONS

    def __init__(self) -> None:
        super().__init__("tr4wad", WAD_LAYOUT, "wad", family="trle", extensions=(".wad",),
                         magic=b"\x81\x00\x00\x00",
                         description="TRLE / TR4 object wad (v129, v130)")

    #: the version word at offset 0, and the high half of the texture count
    #: after it zero (meshes index textures with 16 bits): the version alone is
    #: 129, a common first word (a Knight Online terrain's map size)
    signatures = (Signature("129", (ByteSequence(0, b"\x81\x00\x00\x00"),
                                    ByteSequence(6, b"\x00\x00"))),
                  Signature("130", (ByteSequence(0, b"\x82\x00\x00\x00"),
                                    ByteSequence(6, b"\x00\x00"))))

    def sniff(self, data: bytes) -> bool:
        return _u32(data) in (129, 130)

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        version = _u32(data)
        if version not in (129, 130):
            raise MagicError("not a TR4 wad: version must be 129 or 130", offset=0,
                             expected="129 or 130", found=version)
        doc = super().decode(data, limits=limits, **params)
        doc.warnings.extend(wad_warnings(doc.root))
        return doc

    def info(self, doc: Document) -> dict:
        return wad_info(doc, self.name, self.family)

    def textures(self, doc: Document) -> list:
        pages = model.page_array(bytes(doc.root["pages"]))
        return [(f"page{i:03d}", model.image(pages[i])) for i in range(len(pages))]

    def to_scene(self, doc: Document, **options: Any):
        from .scene import to_scene
        return to_scene(doc, **options)

    import_options = IMPORT_OPTIONS

    def from_scene(self, scene: Any, *, like: Document | None = None, out_name: str = "",
                   out_dir: str = "", **options: Any) -> Document:
        """A glTF moveable pasted into a wad: ``like`` (the original wad) with the
        moveable of the same object id replaced (its state machine, commands and
        id kept where the glTF carries none), or a new wad holding only it.

        A glTF of several moveables (a whole wad's export) pastes each of them,
        unless ``moveable=`` picks one; with ``like``, those the glTF left
        unchanged stay as they were, so an unedited round trip is the wad."""
        from ...registry import coerce_options
        from .importing import from_scene
        from .moveables import empty_wad, extract, insert, view_from_trwad
        opts = coerce_options(IMPORT_OPTIONS, options, what="wad import")
        base = like.root if like is not None else empty_wad()
        if isinstance(base.get("meshes"), (bytes, bytearray)):
            raise FormatError("the --like wad's mesh blob did not parse; cannot insert into it")
        if like is not None:
            recognise(scene, like)
        held = moveable_ids(scene)
        if len(held) > 1 and opts.get("moveable") is None:
            if opts.get("object_id") is not None:
                raise FormatError(f"object_id names one moveable, and the glTF holds "
                                  f"{len(held)}: pick one with --option moveable=ID")
            pastes = [({**opts, "moveable": str(oid)}, oid, None) for oid in held]
        else:
            probe = guarded_import(from_scene, scene, **opts)
            pastes = [(opts, int(probe["moveable"]["object_id"]), probe)]
        new, changed = base, 0
        for one, oid, fresh in pastes:
            if oid in {int(m["object_id"]) for m in new["moveables"]}:
                original = extract(new, oid)
                root = guarded_import(from_scene, scene, like=original, **one)
                if like is not None and view_from_trwad(root) == view_from_trwad(original) \
                        and root["moveable"] == original["moveable"]:
                    continue                 # unchanged: this moveable stays as it was
            else:
                root = fresh if fresh is not None else guarded_import(from_scene, scene, **one)
            new, changed = insert(new, root), changed + 1
        if like is not None and not changed:     # nothing changed: the wad as it was
            return Document(self.name, base, dict(like.params), like.trailing,
                            list(like.warnings))
        return Document(self.name, new, {"mesh_pad": 1}, b"", wad_warnings(new))


def moveable_ids(scene: Any) -> list[int]:
    """Object ids of the moveables a potsherd export put in ``scene``, in order."""
    out = []
    for nd in scene.nodes:
        mov = nd.extras.get("tr4_moveable") if isinstance(nd.extras, dict) else None
        if isinstance(mov, dict) and isinstance(mov.get("object_id"), int) \
                and mov["object_id"] not in out:
            out.append(mov["object_id"])
    return out


def recognise(scene: Any, like: Document) -> None:
    """A potsherd export that lost its extras on the way (Blender) gets back
    what the original's export says about the moveables of the same names
    (:mod:`.importing.like`)."""
    from .importing.like import like_scene, restore
    scene.warnings.extend(restore(scene, like_scene(like.format, like.root, scene)))


def guarded_import(fn: Any, scene: Any, **kw: Any) -> dict:
    """Run an importer; extras of the wrong shape (a hand-edited or hostile glTF)
    become a FormatError naming the problem instead of a traceback."""
    try:
        return fn(scene, **kw)
    except FormatError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as e:
        raise FormatError(f"the glTF's TR4 extras or data are not usable: "
                          f"{type(e).__name__}: {e}") from None


def wad_warnings(root: dict) -> list[str]:
    out = []
    if root["page_byte_count"] % model.PAGE_BYTES:
        out.append(f"texture page bytes ({root['page_byte_count']}) are not whole 256x256 RGB pages")
    pages = root["page_byte_count"] // model.PAGE_BYTES
    bad = [i for i, t in enumerate(model.records(root["textures"]))
           if t["page"] >= pages or t["x"] + t["w"] > 255 or t["y"] + t["h"] > 255]
    if bad:
        out.append(f"{len(bad)} texinfos leave their page (first: {bad[0]})")
    if isinstance(root["meshes"], (bytes, bytearray)):
        pass  # the layout already warned
    return out


# --------------------------------------------------------------------------
# .trwad


class TrwadCodec(LayoutCodec):
    """WadMerger ``.trwad``: one moveable.  The mesh-pad variant is detected per
    file (``mesh_pad`` parameter) and recorded in the document."""

    export_options = EXPORT_OPTIONS

    def __init__(self) -> None:
        super().__init__("trwad", TRWAD_LAYOUT, "trwad", family="trle", extensions=(".trwad",),
                         magic=TRWAD_VERSION.to_bytes(4, "little"),
                         variants=[{"mesh_pad": 0}, {"mesh_pad": 1}], parameters=("mesh_pad",),
                         description="WadMerger moveable export (one moveable of a TR4 wad)")

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        parses, first_error = self.parse_variants(data, limits, params, stop_at_exact=False)
        results = [Document(self.name, root, p, b"", warnings)
                   for root, end, p, warnings in parses if end == len(data)]
        if not results and parses:
            end = parses[0][1]
            raise FormatError(f"{len(data) - end} unexpected bytes after the trwad record",
                              offset=end)
        if not results:
            assert first_error is not None
            raise first_error
        doc = results[0]
        if len(results) > 1 and not _zero_block_ok(doc.root) and _zero_block_ok(results[1].root):
            doc = results[1]
        if len(results) > 1 and _pad_matters(doc.root):
            doc.warnings.append(f"mesh pad variant ambiguous; chose mesh_pad={doc.params['mesh_pad']}")
        doc.warnings.extend(trwad_warnings(doc.root))
        return doc

    def info(self, doc: Document) -> dict:
        return trwad_info(doc, self.name, self.family)

    import_options = IMPORT_OPTIONS

    def from_scene(self, scene: Any, *, like: Document | None = None, out_name: str = "",
                   out_dir: str = "", **options: Any) -> Document:
        """A glTF scene as a ``.trwad`` (see :mod:`.importing`); ``like`` (the
        original ``.trwad``) supplies what the glTF does not carry."""
        from ...registry import coerce_options
        from .importing import from_scene
        opts = coerce_options(IMPORT_OPTIONS, options, what="trwad import")
        if like is not None and "moveable" in like.root:
            recognise(scene, like)
        held = moveable_ids(scene)
        if len(held) > 1 and opts.get("moveable") is None:   # a whole wad's export
            mine = like.root.get("moveable", {}).get("object_id") if like is not None else None
            pick = mine if mine in held else held[0]
            opts["moveable"] = str(pick)
            if pick != mine:
                scene.warnings.append(
                    f"the glTF holds {len(held)} moveables; imported the first, "
                    f"{moveable_name(pick) or pick} (--option moveable=ID picks another)")
        applied: dict = {}
        root = guarded_import(from_scene, scene, like=like.root if like is not None else None,
                              applied=applied, **opts)
        doc = Document(self.name, root, {"mesh_pad": 0}, b"", trwad_warnings(root))
        unit = applied.get("unit_scale")
        if unit is not None and unit != 1.0 / 512.0:
            # the file has no room for it: the sidecar carries it to the export
            doc.meta["import_sidecar"] = {"unit_scale": float(unit)}
        return doc

    def textures(self, doc: Document) -> list:
        return [(f"texture{i:04d}", model.image(model.bgr_block(t)))
                for i, t in enumerate(doc.root.get("textures", []))]

    def to_scene(self, doc: Document, **options: Any):
        from .scene import to_scene
        return to_scene(doc, **options)


def _zero_block_ok(root: dict) -> bool:
    z = root.get("zero_words")
    return z is None or not np.any(z)


def _pad_matters(root: dict) -> bool:
    from .layouts import odd_quads
    return any(odd_quads(m["polygons"]) for m in root.get("meshes", []))


def _first_polygon_beyond(polygons: list, vertex_count: int) -> int | None:
    """The first polygon with a vertex index >= ``vertex_count`` (one pass
    over the mesh's indices, not one reduction per polygon), or None."""
    if not len(polygons):
        return None
    if isinstance(polygons, PolygonColumns):        # (an import's: its columns)
        width = np.where(polygons.shape == 9, 4, 3)[:, None]
        bad = np.flatnonzero(((polygons.vertices >= vertex_count)
                              & (np.arange(4) < width)).any(1))
        return int(bad[0]) if len(bad) else None
    corners = [p["vertices"] for p in polygons]
    beyond = np.flatnonzero(np.concatenate(corners) >= vertex_count)
    if not len(beyond):
        return None
    ends = np.cumsum([len(c) for c in corners])
    return int(np.searchsorted(ends, beyond[0], "right"))


def _texture_indices(polygons: list) -> np.ndarray:
    """Every polygon's texture index (:func:`model.texture_index` on columns)."""
    if isinstance(polygons, PolygonColumns):
        shape, word = polygons.shape, polygons.texture & 0xFFFF
    else:
        shape = np.array([p["shape"] for p in polygons], np.int64)
        word = np.array([p["texture"] for p in polygons], np.int64) & 0xFFFF
    quad_index = np.where(word & 0x8000, (0x10000 - word) & 0xFFFF, word)
    return np.where(shape == 9, quad_index, word & 0x0FFF)


def trwad_warnings(root: dict) -> list[str]:
    """What makes a ``.trwad`` unusual (validation warns, never aborts)."""
    out = []
    if root["version"] != TRWAD_VERSION:
        out.append(f"version {root['version']} (WadMerger writes {TRWAD_VERSION})")
    if root["moveable_count"] != 1:
        out.append(f"moveable count {root['moveable_count']} is not 1: body kept opaque")
        return out
    n = root["moveable"]["mesh_count"]
    if root["link_word_count"] != 4 * n - 1:
        out.append(f"link word count {root['link_word_count']} does not match "
                   f"4 * {n} meshes - 1 = {4 * n - 1}")
    if 0 <= root["link_word_count"] < 4 * max(n - 1, 0):
        out.append(f"only {root['link_word_count']} link words for {n} meshes; "
                   f"the skeleton is incomplete")
    if root["mesh_count"] != n:
        out.append(f"{root['mesh_count']} meshes stored, the moveable says {n}")
    z = root["zero_words"]
    if np.any(z):
        out.append(f"{int(np.count_nonzero(z))} of the {len(z)} words after the meshes are not zero")
    for i, m in enumerate(root["meshes"]):
        nv = int(m["vertex_count"])
        j = _first_polygon_beyond(m["polygons"], nv)
        if j is not None:
            out.append(f"mesh {i} polygon {j} uses a vertex index >= its {nv} vertices")
            break
    t = root["texture_count"]
    for i, m in enumerate(root["meshes"]):
        polys = m["polygons"]
        if not len(polys):
            continue
        bad = np.flatnonzero(_texture_indices(polys) >= t)
        if len(bad):
            out.append(f"mesh {i} polygon {bad[0]} refers to a texture beyond the {t} stored")
            break
    anims = model.records(root["animations"])
    base = root["moveable"]["keyframe_offset"]
    total = 2 * root["keyframe_word_count"]
    for i, a in enumerate(anims):
        if a["frame_size"] == 0:
            continue
        start = a["keyframe_offset"] - base
        end = (anims[i + 1]["keyframe_offset"] - base) if i + 1 < len(anims) else total
        if start < 0 or end > total or (end - start) % (2 * a["frame_size"]):
            out.append(f"animation {i}: keyframe bytes {start}..{end} do not divide into "
                       f"{a['frame_size']}-word frames")
            break
    ncmd = sum(a["command_count"] for a in anims)
    if ncmd != root["command_count"]:
        out.append(f"{root['command_count']} commands stored, the animations count {ncmd}")
    return out


# --------------------------------------------------------------------------
# Companion files


class SwdCodec(LayoutCodec):
    def __init__(self) -> None:
        super().__init__("tr4swd", SWD_LAYOUT, "swd", family="trle", extensions=(".swd",),
                         magic=b"\x81\x00\x00\x00", description="TRLE sprites (.swd)")

    #: the wad's version word and a sprite count under 65536: the same bytes as
    #: a wad's, so identifiers matching bytes alone name both
    signatures = (Signature("", (ByteSequence(0, b"\x81\x00\x00\x00"),
                                 ByteSequence(6, b"\x00\x00"))),)

    def sniff(self, data: bytes) -> bool:
        return False  # shares the wad's magic: by extension only

    def info(self, doc: Document) -> dict:
        return swd_info(doc, self.name, self.family)

    def textures(self, doc: Document) -> list:
        raw = bytes(doc.root["pages"])
        pages = model.page_array(raw)
        return [(f"sprites{i:03d}", model.image(pages[i][:, :, ::-1], transparent_magenta=True))
                for i in range(len(pages))]


class SfxCodec(LayoutCodec):
    def __init__(self) -> None:
        super().__init__("tr4sfx", SFX_LAYOUT, "sfx", family="trle", extensions=(".sfx",),
                         variants=[{"map_size": 370}, {"map_size": 2048}],
                         parameters=("map_size",),
                         description="TRLE sound map and sample list (.sfx)")

    def info(self, doc: Document) -> dict:
        return sfx_info(doc, self.name, self.family)


class TextListCodec(Codec):
    """A text list, one entry per line (``.was`` names, ``.sam`` sample files).

    The root is ``{"lines": [...]}``, the file split at every ``\\n`` (a final
    newline gives a last empty entry), so any bytes come back unchanged."""

    family = "trle"

    def __init__(self, name: str, extension: str, description: str) -> None:
        self.name = name
        self.extensions = (extension,)
        self.description = description

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        if b"\0" in data:
            raise FormatError("a text list holds no NUL bytes", offset=data.index(b"\0"))
        return Document(self.name, {"lines": data.split(b"\n")}, {}, b"", [])

    def encode(self, doc: Document) -> bytes:
        return b"\n".join(bytes(x) for x in doc.root["lines"])

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        ctx = JsonCtx(form, doc.meta.get("text_encoding", self.text_encoding))
        lines = [bytes(x).hex() if form == "wire" else text_or_hex(bytes(x), ctx)
                 for x in doc.root["lines"]]
        return self.json_envelope(doc, form, {"lines": lines})

    def from_json(self, obj: dict) -> Document:
        env = self.parse_envelope(obj)  # form, meta, params, trailing: checked like every codec's
        ctx, form = env.ctx, env.ctx.form
        if env.trailing:
            raise JsonFormatError("a text list keeps no trailing bytes (every byte is in its lines)",
                                  path="$.trailing")
        root = obj.get("root")
        if not isinstance(root, dict) or not isinstance(root.get("lines"), list) or set(root) != {"lines"}:
            raise JsonFormatError("root must be {\"lines\": [...]}", path="$.root")
        lines = []
        for i, x in enumerate(root["lines"]):
            jp = f"$.root.lines[{i}]"
            if form == "wire":
                if not isinstance(x, str):
                    raise JsonFormatError("expected a hex string", path=jp)
                try:
                    lines.append(bytes.fromhex(x))
                except ValueError:
                    raise JsonFormatError("invalid hex string", path=jp) from None
            else:
                lines.append(text_or_hex_back(x, ctx, jp))
            if b"\n" in lines[-1] or b"\0" in lines[-1]:
                raise JsonFormatError("a line cannot hold a newline or NUL", path=jp)
        return Document(self.name, {"lines": lines}, env.params, b"", [], env.meta)

    def info(self, doc: Document) -> dict:
        return text_list_info(doc, self.name, self.family, self.text_encoding)


WAD = WadCodec()
TRWAD = TrwadCodec()
CODECS = [WAD, TRWAD, SwdCodec(), SfxCodec(),
          TextListCodec("tr4was", ".was", "TRLE wad object names (.was)"),
          TextListCodec("tr4sam", ".sam", "TRLE sample file list (.sam)")]
