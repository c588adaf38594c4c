"""Knight Online record codecs, all driven by the wire layout ``layouts/ko.layout``.

Each top-level record of the layout is one codec.  Per-file variants (format
note section 7) are layout parameters, picked by trial parse in the order
given by ``variants`` and stored in ``Document.params`` (the writer repeats
them); ``--param name=value`` / keyword arguments override them.

Opaque fallback rule (note section 9: unknown layouts round-trip as opaque
files with a warning).  A file is kept whole as raw bytes, in a document with
``params = {"opaque": 1}`` and a warning, only when all of these hold:

1. no variant of its record parses, and no parameter was given explicitly;
2. the codec has a ``foreign`` test (n3shape, opd, gtd, uif: the formats the
   note lists with foreign files) and it recognises the bytes:
   * n3shape / opd / uif: the first fields are plausible for the format (a
     printable name, a sane width/length or child count), and the parse failed
     on an *absurd* count or length -- one of at least 2**20 items that is
     larger than the whole input -- or on an impossible value.  A truncated
     real file instead fails by running out of input on a genuine count, so it
     still raises :class:`FormatError`;
   * gtd (the obfuscated current-client file): the first word is neither a
     1264 header (version 1-2 + short name) nor a 2^n+1 map size, and the file
     has at least 4 KiB.  Truncated gtds keep their valid first word and raise.

``decode(data, opaque=1)`` keeps any file opaque on request.  fxb bundles of
version >= 3 are not a fallback: the layout itself keeps their body raw.
"""
from __future__ import annotations

import os
from importlib import resources
from typing import Any, Callable

import numpy as np

from ...core.errors import (CountError, EncodeError, FormatError, JsonFormatError,
                            TruncatedError, ValueFormatError)
from ...core.layout import (GROUPS, PRIMS, JsonCtx, Layout, Storage, String, Tail, _jerr,
                            hex_to_bytes, parse_layout_text)
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.values import RawString
from ...document import Document
from ...registry import LayoutCodec, Option

try:  # the texture engineer's NTF storage (gtd lightmaps)
    from .ntf import NTF_STORAGE
except ImportError:  # pragma: no cover - only while ntf.py does not exist
    NTF_STORAGE = Tail()

FAMILY = "ko"
CP_DEFAULT = "cp949"
CP_TAIWAN = "cp950"


# ----------------------------------------------------------------------------
# text: bytes are authoritative; the readable view decodes per string


def _roundtrips(data: bytes, enc: str) -> str | None:
    try:
        t = data.decode(enc)
    except UnicodeDecodeError:
        return None
    try:
        return t if t.encode(enc) == data else None
    except UnicodeEncodeError:
        return None


class KoString(String):
    """The spec's ``string`` with the note's text view (section 8).

    Readable JSON shows the file's code page (cp949, or cp950 for ``_tw``
    files) where it round-trips, else the other code page as
    ``{"text": ..., "encoding": ...}``, else ``{"hex": ...}``.
    """

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        raw = getattr(v, "raw_len", None)
        if ctx.form == "wire" or (raw is not None and len(v) == 0):
            return super().to_json(v, ctx)
        data = bytes(v)
        t = _roundtrips(data, ctx.encoding)
        if t is not None:
            return t
        other = CP_TAIWAN if ctx.encoding != CP_TAIWAN else CP_DEFAULT
        t = _roundtrips(data, other)
        if t is not None:
            return {"text": t, "encoding": other}
        return {"hex": data.hex()}

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if ctx.form == "readable" and isinstance(o, dict) and set(o) == {"text", "encoding"}:
            enc = o["encoding"]
            if enc not in (CP_DEFAULT, CP_TAIWAN) or not isinstance(o["text"], str):
                raise _jerr("text view needs a string and encoding cp949 or cp950", jpath)
            try:
                return RawString(o["text"].encode(enc))
            except UnicodeEncodeError:
                raise _jerr(f"text cannot be encoded as {enc}", jpath) from None
        return super().from_json(o, ctx, jpath)


def text_encoding_for(name: str | None) -> str:
    """cp950 (Big5) for Taiwan-client files (``*_tw.*``), else cp949."""
    if name:
        stem = os.path.splitext(os.path.basename(name))[0].lower()
        if stem.endswith("_tw"):
            return CP_TAIWAN
    return CP_DEFAULT


def text(v: Any, enc: str = CP_DEFAULT) -> str:
    """A string field as display text (lossy view; ``info`` only)."""
    if v is None:
        return ""
    if isinstance(v, str):  # already text (a path given as an option)
        return v
    data = bytes(v)
    for e in (enc, CP_TAIWAN if enc != CP_TAIWAN else CP_DEFAULT):
        t = _roundtrips(data, e)
        if t is not None:
            return t.rstrip("\x00")
    return data.decode("latin-1")


# ----------------------------------------------------------------------------
# the layout


class RecordTable(Storage):
    """A record of fixed primitive fields as a numpy structured dtype.

    Used for records that occur by the hundred thousand (the gtd height
    grid): an array of them decodes with one ``frombuffer`` into a table
    (JSON: one column per field) instead of one dict per item.  The record's
    rows in the layout stay the description; a single value (outside an
    array) goes through the layout's own record."""

    def __init__(self, name: str, rows: list) -> None:
        fields = []
        for fname, spec, cond in rows:
            if cond != "always" or not isinstance(spec, str) or spec not in PRIMS and spec not in GROUPS:
                raise ValueError(f"{name}.{fname}: a record table needs fixed primitive fields")
            if spec in PRIMS:
                fields.append((fname, PRIMS[spec].dtype))
            else:
                g = GROUPS[spec]
                fields.append((fname, g.prim.dtype, (g.n,)))
        self.name = name
        self.dtype = np.dtype(fields)
        self.size = self.min_size = self.dtype.itemsize
        self.record: Storage | None = None  # set once the layout is built

    def describe(self) -> str:
        return self.name

    def decode(self, r, s):
        return self.record.decode(r, s)

    def encode(self, w, v, s):
        self.record.encode(w, v, s)

    def to_json(self, v, ctx):
        return self.record.to_json(v, ctx)

    def from_json(self, o, ctx, jpath):
        return self.record.from_json(o, ctx, jpath)


#: records decoded as numpy tables inside arrays (bulk data)
TABLE_RECORDS = ("terrainPoint", "terrainPatch", "terrainTile")


def _load_layout() -> Layout:
    path = resources.files(__package__).joinpath("layouts/ko.layout")
    rows = parse_layout_text(path.read_text(encoding="utf-8"), source=str(path))
    tables = {n: RecordTable(n, rows[n]) for n in TABLE_RECORDS}
    layout = Layout(rows, {"ntf": NTF_STORAGE, "string": KoString(), **tables})
    for n, t in tables.items():
        t.record = layout.records[n]
    return layout


LAYOUT = _load_layout()


# ----------------------------------------------------------------------------
# codec


#: formats with a glTF conversion (``scene.py``, note section 10)
SCENE_FORMATS = ("n3pmesh", "n3shape", "n3joint", "n3cskins", "n3skin", "n3cpart", "n3cplug",
                 "n3cplug_cloak", "n3chr")


#: options of the KO glTF export (``to_scene``), per format
_LOD = Option("lod", int, "level of detail: .n3pmesh LOD record, .n3cskins/.n3chr skin LOD 0-3 "
              "(0: most detailed)", 0)
_DATA_ROOT = Option("data_root", str, "client data folder for resolving referenced files")
_RIG = (Option("skeleton", str, ".n3joint (path or client reference) to bind the skin to"),
        Option("animation", str, ".n3anim whose clips animate that skeleton"))
_FX = Option("fx_meshes", bool, "also export a plug's inline effect mesh (fx_...)", False)
EXPORT_OPTIONS = {
    "n3pmesh": (_LOD, _DATA_ROOT),
    "n3shape": (_DATA_ROOT,),
    "n3joint": (_DATA_ROOT,),
    "n3cskins": (_LOD, _DATA_ROOT, *_RIG),
    "n3skin": (_LOD, _DATA_ROOT, *_RIG),
    "n3cpart": (_LOD, _DATA_ROOT, *_RIG),
    "n3cplug": (_DATA_ROOT, _FX),
    "n3cplug_cloak": (_DATA_ROOT, _FX),
    "n3chr": (_LOD, _DATA_ROOT, _FX),
}


def _scene_exporter(name: str):
    def to_scene(doc: Document, **options: Any):
        from .scene import SCENES  # scene.py imports this module
        return SCENES[name](doc, **options)
    to_scene.__doc__ = f"The {name} document as a neutral scene (glTF export)."
    return to_scene


#: formats with a glTF import (``importer.py``)
IMPORT_FORMATS = ("n3pmesh", "n3cskins", "n3cpart", "n3cplug", "n3joint", "n3anim", "n3chr")
_NO_LOD = Option("lod", int, "1 (default): generate the progressive mesh (edge collapses and "
                 "LOD records); 0: full detail only", 1)
_NO_LOD_ALIAS = Option("no_lod", bool, "full detail only (same as lod=0)", False)
_NAME = Option("name", str, "the name stored in the file (default: the glTF's)")
_ENCRYPT = Option("encrypt", bool, "write referenced textures as NTF7 (encrypted)", False)
_TEXTURES = Option("textures", bool, "write the glTF's images as NTF .dxt textures beside the "
                   "output (default on for .n3chr/.n3cpart/.n3cplug)", True)
_FOLDER = Option("folder", str, "client folder the written references name (chr for .n3chr, "
                 "item for parts and plugs; the client resolves folder\\file from its data root)")
IMPORT_OPTIONS = {
    "n3pmesh": (_NO_LOD, _NO_LOD_ALIAS, _NAME),
    "n3cskins": (_NO_LOD, _NO_LOD_ALIAS, _NAME),
    "n3cpart": (_NO_LOD, _NO_LOD_ALIAS, _NAME, _TEXTURES, _ENCRYPT, _FOLDER),
    "n3cplug": (_NO_LOD, _NO_LOD_ALIAS, _NAME, _TEXTURES, _ENCRYPT, _FOLDER),
    "n3joint": (_NAME,),
    "n3anim": (),
    "n3chr": (_NO_LOD, _NO_LOD_ALIAS, _NAME, _TEXTURES, _ENCRYPT, _FOLDER),
}


def _scene_importer(name: str):
    def from_scene(scene: Any, *, like: Document | None = None, out_name: str = "",
                   **options: Any):
        from .importer import IMPORTERS  # importer.py imports this module
        return IMPORTERS[name](scene, like=like, out_name=out_name, **options)
    from_scene.__doc__ = f"A neutral scene (glTF import) as {name} file(s)."
    return from_scene


class KoCodec(LayoutCodec):
    """A layout codec with the note's opaque fallback and text encodings."""

    #: set per instance for the formats of SCENE_FORMATS / IMPORT_FORMATS
    to_scene = None
    from_scene = None

    def __init__(self, name: str, root: str, *, extensions, variants=None,
                 description: str = "", parameters=(), allow_trailing: bool = True,
                 foreign: Callable[[bytes, FormatError], str | None] | None = None,
                 info: Callable[[Document, str], dict] | None = None,
                 check: Callable[[Document], None] | None = None) -> None:
        super().__init__(name, LAYOUT, root, family=FAMILY, extensions=extensions,
                         variants=variants, description=description,
                         text_encoding=CP_DEFAULT, parameters=parameters,
                         allow_trailing=allow_trailing)
        self._foreign = foreign
        self._info = info
        self._check = check
        if name in SCENE_FORMATS:
            self.to_scene = _scene_exporter(name)
            self.export_options = EXPORT_OPTIONS[name]
        if name in IMPORT_FORMATS:
            self.from_scene = _scene_importer(name)
            self.import_options = IMPORT_OPTIONS[name]

    # --- decode / encode ------------------------------------------------
    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        if params.get("opaque"):
            return self._opaque(data, "kept opaque on request (opaque=1)")
        try:
            doc = super().decode(data, limits=limits, **params)
        except FormatError as e:
            # never for explicit parameters: a wrong --param is the user's error
            reason = self._foreign(data, e) if self._foreign and not params else None
            if reason is None:
                raise
            return self._opaque(data, f"{reason}; whole file kept raw "
                                      f"(the {self.root} parse fails: {e})")
        if self._check is not None:
            self._check(doc)
        return doc

    def _opaque(self, data: bytes, why: str) -> Document:
        return Document(self.name, {"body": data}, {"opaque": 1}, b"", [why])

    def _root_of(self, doc: Document) -> str:
        return "opaqueFile" if doc.params.get("opaque") else self.root

    def encode(self, doc: Document) -> bytes:
        params = {k: v for k, v in doc.params.items() if k != "opaque"}
        try:
            body = self.layout.encode(self._root_of(doc), doc.root, params)
        except EncodeError:
            raise
        except FormatError as e:  # e.g. an edited width of inf in an opd cell-count expression
            raise EncodeError(f"document cannot be written: {e.message}", path=e.path or None,
                              expected=e.expected, found=e.found) from None
        return body + bytes(doc.trailing)

    # --- JSON -----------------------------------------------------------
    def encoding_of(self, doc: Document) -> str:
        enc = doc.meta.get("text_encoding")
        return enc if enc in (CP_DEFAULT, CP_TAIWAN) else text_encoding_for(doc.source)

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        enc = self.encoding_of(doc)
        ctx = JsonCtx(form, enc)
        root = self.layout.to_json(self._root_of(doc), doc.root, ctx)
        env = self.json_envelope(doc, form, root)
        env["meta"] = {**doc.meta, "text_encoding": enc}
        return env

    def from_json(self, obj: dict) -> Document:
        meta = obj.get("meta") or {}
        if not isinstance(meta, dict):
            raise JsonFormatError("meta must be an object", path="$.meta")
        enc = meta.get("text_encoding", CP_DEFAULT)
        if enc not in (CP_DEFAULT, CP_TAIWAN):
            raise JsonFormatError("text_encoding must be cp949 or cp950", path="$.meta.text_encoding")
        form = obj.get("form", "wire")
        try:
            ctx = JsonCtx(form, enc)
        except ValueError as e:
            raise JsonFormatError(str(e), path="$.form") from None
        params = obj.get("params") or {}
        if not isinstance(params, dict):
            raise JsonFormatError("params must be an object", path="$.params")
        for k, v in params.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise JsonFormatError("parameters are numbers", path=f"$.params.{k}")
        trailing = obj.get("trailing", "")
        trailing = hex_to_bytes(trailing, "$.trailing")
        root_name = "opaqueFile" if params.get("opaque") else self.root
        root = self.layout.from_json(root_name, obj.get("root"), ctx, "$.root")
        return Document(self.name, root, dict(params), trailing, [], dict(meta))

    def opaque_bytes(self, doc: Document) -> int:
        return len(doc.trailing) + self.layout.opaque_size(self._root_of(doc), doc.root)

    # --- info -----------------------------------------------------------
    def info(self, doc: Document) -> dict:
        out: dict[str, Any] = {"format": self.name, "family": self.family}
        if doc.params.get("opaque"):
            out["opaque"] = True
            return out
        if self._info is not None:
            out.update(self._info(doc, self.encoding_of(doc)))
        return out


# ----------------------------------------------------------------------------
# foreign-layout recognition (the opaque fallback rule, see module docstring)


def _failed_inside(data: bytes, e: FormatError) -> bool:
    """The parse failed on an absurd count or length (one that needs more
    items than the whole input has bytes, and at least 2**20), or on an
    impossible value (a non-finite cell grid).  A truncated real file fails by
    running out of input on a genuine count instead, which is never that large."""
    if isinstance(e, ValueFormatError):
        return True
    found = e.found
    return (isinstance(e, (CountError, TruncatedError)) and isinstance(found, int)
            and found >= 1 << 20 and found > len(data))


def _i32(data: bytes, off: int) -> int | None:
    if off + 4 > len(data):
        return None
    return int.from_bytes(data[off:off + 4], "little", signed=True)


def _plausible_string(data: bytes, off: int, maxlen: int = 260) -> int | None:
    """End offset of a plausible name string at ``off`` (printable bytes)."""
    n = _i32(data, off)
    if n is None or n < 0 or n > maxlen or off + 4 + n > len(data):
        return None
    s = data[off + 4:off + 4 + n]
    if any(b < 0x20 and b not in (0,) for b in s):
        return None
    return off + 4 + n


def foreign_shape(data: bytes, e: FormatError) -> str | None:
    """A shape of another N3 game (Repent Online): a plausible transform name,
    then a layout this engine does not read."""
    if _plausible_string(data, 0) is not None and _failed_inside(data, e):
        return "n3shape of an unknown layout (note row 3: a Repent Online shape)"
    return None


def foreign_opd(data: bytes, e: FormatError) -> str | None:
    """An opd of another build (Hero Online): plausible width/length floats."""
    import struct
    for off in (0, None):
        if off is None:
            end = _plausible_string(data, 4, 64)
            if end is None or _i32(data, 0) not in (1, 2):
                continue
            off = end
        if off + 8 > len(data):
            continue
        w, h = struct.unpack_from("<2f", data, off)
        if 0 < w <= 65536 and 0 < h <= 65536 and _failed_inside(data, e):
            return "opd of an unknown layout (note row 15: the Hero Online build)"
    return None


def foreign_gtd(data: bytes, e: FormatError) -> str | None:
    """An obfuscated or compressed gtd of a current client: neither a header
    (version 1-2 + short name) nor a 2^n+1 map size at offset 0, and the
    file is large enough to be a terrain."""
    v = _i32(data, 0)
    header = v in (1, 2) and _plausible_string(data, 4, 64) is not None
    size_ok = v is not None and v > 1 and ((v - 1) & (v - 2)) == 0
    if not header and not size_ok and len(data) >= 4096:
        return "gtd of an unknown layout (note row 14: obfuscated or compressed)"
    return None


def foreign_uif(data: bytes, e: FormatError) -> str | None:
    """A UIF of an older or foreign build (note row 20): a plausible root
    name and child count, but a layout this engine does not read."""
    end = _plausible_string(data, 0, 256)
    if end is None or _i32(data, end) is None:
        return None
    count = int.from_bytes(data[end:end + 2], "little", signed=True)
    if 0 <= count <= 4096 and _failed_inside(data, e):
        return "uif of an unknown layout (note row 20)"
    return None


# ----------------------------------------------------------------------------
# post-decode checks


def check_fxb(doc: Document) -> None:
    v = doc.root.get("version")
    if isinstance(v, int) and v >= 3:
        doc.warnings.append(f"fxb version {v}: part layouts unknown (note row 8); "
                            f"body of {len(doc.root.get('body', b''))} bytes kept raw")


# ----------------------------------------------------------------------------
# info


def _s(v: Any, enc: str) -> str:
    return text(v, enc)


def _keys_info(keys: list) -> list[dict]:
    out = []
    for k in keys:
        d = {"count": int(k["count"])}
        if k["count"] > 0:
            d["type"] = {0: "vector", 1: "quaternion"}.get(k["keyType"], k["keyType"])
            d["samplingRate"] = float(k["samplingRate"])
        out.append(d)
    return out


def _transform_info(t: dict, enc: str) -> dict:
    return {"name": _s(t["name"], enc), "position": [float(x) for x in t["position"]],
            "keys": [int(k["count"]) for k in t["keys"]],
            "collisionMesh": _s(t["collisionMesh"], enc), "climbMesh": _s(t["climbMesh"], enc)}


def replay_pmesh(m: dict) -> tuple[int, int, np.ndarray]:
    """Full detail of a progressive mesh (note section 10.5): replay every
    collapse in file order from the stored lowest-detail index buffer.
    Returns (vertex count, index count, index buffer)."""
    idx = np.array(m["indices"], dtype=np.int64)
    changes = np.asarray(m["indexChanges"], dtype=np.int64)
    nv, ni = int(m["minVertexCount"]), int(m["minIndexCount"])
    for c in m["collapses"]:
        ni += int(c["indicesToLose"])
        nv += int(c["verticesToLose"])
        lo = max(int(c["indexChangesOffset"]), 0)
        sel = changes[lo:lo + max(int(c["indicesToChange"]), 0)]
        sel = sel[(sel >= 0) & (sel < len(idx))]
        idx[sel] = nv - 1
    return nv, ni, idx


def info_n3pmesh(doc: Document, enc: str) -> dict:
    m = doc.root
    nv, ni, _ = replay_pmesh(m)
    return {"name": _s(m["name"], enc), "vertices": int(m["vertexCount"]),
            "indices": int(m["indexCount"]), "faces": int(m["indexCount"]) // 3,
            "minVertices": int(m["minVertexCount"]), "minFaces": int(m["minIndexCount"]) // 3,
            "collapses": len(m["collapses"]),
            "fullDetail": {"vertices": nv, "faces": ni // 3},
            "lods": [{"distance": float(l["distance"]), "vertices": int(l["vertexCount"])}
                     for l in m["lods"]]}


def _skin_info(s: dict) -> dict:
    d = {"faces": int(s["faceCount"]), "vertices": int(s["vertexCount"]), "uvs": int(s["uvCount"])}
    b = s.get("bindings")
    if b:
        counts = [int(x["count"]) for x in b]
        d["maxWeightsPerVertex"] = max(counts)
    return d


def info_n3cskins(doc: Document, enc: str) -> dict:
    r = doc.root
    if "lods" not in r:  # a single skin / imesh
        return {"name": _s(r["name"], enc), **_skin_info(r)}
    return {"name": _s(r["name"], enc),
            "lods": [{"name": _s(s["name"], enc), **_skin_info(s)} for s in r["lods"]]}


def _joint_tree(j: dict, enc: str, counter: list) -> dict:
    index = counter[0]
    counter[0] += 1
    node = {"index": index, "name": _s(j["name"], enc),
            "keys": [int(k["count"]) for k in j["keys"]]}
    kids = [_joint_tree(c, enc, counter) for c in j["children"]]
    if kids:
        node["children"] = kids
    return node


def info_n3joint(doc: Document, enc: str) -> dict:
    counter = [0]
    tree = _joint_tree(doc.root, enc, counter)
    return {"joints": counter[0], "keysPerJoint": int(doc.params.get("jointKeys", 4)), "tree": tree}


def info_n3anim(doc: Document, enc: str) -> dict:
    clips = []
    for c in doc.root["clips"]:
        clips.append({"name": _s(c["name"], enc), "start": float(c["start"]),
                      "end": float(c["end"]), "fps": float(c["fps"])})
    return {"clips": clips}


def info_n3chr(doc: Document, enc: str) -> dict:
    r = doc.root
    out = {"name": _s(r["transform"]["name"], enc), "joint": _s(r["joint"], enc),
           "parts": [_s(p, enc) for p in r["parts"]], "plugs": [_s(p, enc) for p in r["plugs"]],
           "animation": _s(r["animationControl"], enc),
           "jointPartStarts": [int(x) for x in r["jointPartStarts"]],
           "jointPartEnds": [int(x) for x in r["jointPartEnds"]]}
    if "fxPlug" in r:
        out["fxPlug"] = _s(r["fxPlug"], enc)
    return out


def info_n3cpart(doc: Document, enc: str) -> dict:
    r = doc.root
    return {"name": _s(r["name"], enc), "texture": _s(r["texture"], enc),
            "skins": _s(r["geometry"], enc)}


def info_n3cplug(doc: Document, enc: str) -> dict:
    r = doc.root
    out = {"name": _s(r["name"], enc), "type": int(r["type"]), "joint": int(r["joint"]),
           "mesh": _s(r["geometry"], enc), "texture": _s(r["texture"], enc)}
    if "traceStep" in r:
        out["traceStep"] = int(r["traceStep"])
    if "useVMesh" in r:
        out["useVMesh"] = int(r["useVMesh"])
    if "vmesh" in r:
        m = r["vmesh"]
        out["vmesh"] = {"vertices": int(m["vertexCount"]), "faces": int(m["indexCount"]) // 3}
    return out


def info_n3shape(doc: Document, enc: str) -> dict:
    r = doc.root
    parts = [{"mesh": _s(p["mesh"], enc), "textures": [_s(t, enc) for t in p["textures"]]}
             for p in r["parts"]]
    meta = {k: int(r[k]) for k in ("belong", "eventID", "eventType", "npcID", "npcStatus") if k in r}
    return {"transform": _transform_info(r["transform"], enc), "parts": parts,
            "metadataInts": len(meta), "metadata": meta}


def info_n3sky(doc: Document, enc: str) -> dict:
    r = doc.root
    return {"suns": [_s(x, enc) for x in r["suns"]], "clouds": [_s(x, enc) for x in r["clouds"]],
            "moon": _s(r["moon"], enc), "dayChanges": len(r["dayChanges"])}


def info_n3fxplug(doc: Document, enc: str) -> dict:
    r = doc.root
    return {"name": _s(r["name"], enc),
            "parts": [{"name": _s(p["name"], enc), "bundle": _s(p["bundle"], enc),
                       "joint": int(p["jointIndex"])} for p in r["parts"]]}


FX_TYPES = {0: "empty", 1: "particle", 2: "billboard", 3: "mesh", 4: "bottomBoard"}


def info_fxb(doc: Document, enc: str) -> dict:
    r = doc.root
    out = {"version": int(r["version"])}
    if "slots" in r:
        out["slots"] = [{"type": FX_TYPES.get(s["type"], s["type"]),
                         **({"partVersion": s["version"], "baseVersion": s["baseVersion"]}
                            if s["type"] > 0 else {})} for s in r["slots"]]
    else:
        out["opaqueBody"] = len(r.get("body", b""))
    return out


def info_gtd(doc: Document, enc: str) -> dict:
    r = doc.root
    out = {"header": bool(doc.params.get("gtdHeader")), "mapSize": int(r["mapSize"])}
    if "version" in r:
        out["version"] = int(r["version"])
        out["name"] = _s(r["name"], enc)
    out["zoneName"] = text(bytes(r["zoneName"]).split(b"\0", 1)[0], enc)
    ti = r.get("tileInfo")
    if ti is not None:
        out["tiles"] = int(ti["tileCount"])
        out["tileSources"] = [text(bytes(s).split(b"\0", 1)[0], enc) for s in ti.get("sources", [])]
    for k in ("lightmaps", "rivers", "ponds"):
        if k in r:
            out[k] = len(r[k])
    out["legacyRivers"] = int(doc.params.get("legacyRivers", 0))
    out["legacyPonds"] = int(doc.params.get("legacyPonds", 0))
    return out


def info_opd(doc: Document, enc: str) -> dict:
    r = doc.root
    out = {"header": bool(doc.params.get("opdHeader")), "width": float(r["width"]),
           "length": float(r["height"]), "triangles": int(r["triangleCount"]),
           "cells": len(r["cells"]), "cellsPresent": sum(1 for c in r["cells"] if c["present"] > 0),
           "objects": len(r["objects"])}
    if "version" in r:
        out["version"] = int(r["version"])
        out["name"] = _s(r["name"], enc)
    return out


UI_TYPES = {0: "base", 1: "button", 2: "static", 3: "progress", 4: "image", 5: "scrollbar",
            6: "string", 7: "trackbar", 8: "edit", 9: "area", 10: "tooltip", 13: "iconslot",
            14: "list"}


def _ui_tree(node: dict, typ: int, enc: str, counter: list, depth: int = 0) -> dict:
    counter[0] += 1
    out = {"type": UI_TYPES.get(typ & 0xFFFF, typ), "id": _s(node["id"], enc)}
    if node.get("name"):
        out["name"] = _s(node["name"], enc)
    if typ & 0xFFFF == 6 and "text" in node:
        out["text"] = _s(node["text"], enc)
    kids = [_ui_tree(c["node"], int(c["type"]), enc, counter, depth + 1) for c in node["children"]]
    if kids:
        out["children"] = kids
    return out


def info_uif(doc: Document, enc: str) -> dict:
    counter = [0]
    tree = _ui_tree(doc.root["root"], int(doc.params.get("type", 0)), enc, counter)
    return {"textEncoding": enc, "nodes": counter[0], "tree": tree}


# ----------------------------------------------------------------------------
# the codecs

_JOINT = [{"jointKeys": 4}, {"jointKeys": 3}]
_GTD = [{"gtdHeader": h, "legacyRivers": r, "legacyPonds": p}
        for h in (1, 0) for r in (0, 1) for p in (0, 1)]
_OPD = [{"opdHeader": 1}, {"opdHeader": 0}]

CODECS = [
    KoCodec("n3pmesh", "n3pmesh", extensions=[".n3pmesh"], info=info_n3pmesh,
            description="Knight Online progressive mesh"),
    KoCodec("n3cskins", "n3cskins", extensions=[".n3cskins"], info=info_n3cskins,
            description="Knight Online character part skins (4 LODs)"),
    KoCodec("n3skin", "n3cskin", extensions=[".n3skin"], info=info_n3cskins,
            description="Knight Online single skin (CN3Skin)"),
    KoCodec("n3imesh", "n3cskin", extensions=[".n3imesh"], info=info_n3cskins,
            variants=[{"skinBindings": 0}], description="Knight Online indexed mesh (CN3IMesh)"),
    KoCodec("n3cpart", "n3cpart", extensions=[".n3cpart"], info=info_n3cpart,
            description="Knight Online character part"),
    KoCodec("n3cplug", "n3cplug", extensions=[".n3cplug"], info=info_n3cplug,
            variants=[{"plugTrailer": 1}], description="Knight Online character plug"),
    KoCodec("n3cplug_cloak", "n3cplug", extensions=[".n3cplug_cloak"], info=info_n3cplug,
            variants=[{"plugTrailer": 0}], description="Knight Online cloak plug"),
    KoCodec("n3shape", "n3shape", extensions=[".n3shape"], info=info_n3shape,
            foreign=foreign_shape, description="Knight Online shape"),
    KoCodec("n3chr", "n3chr", extensions=[".n3chr"], info=info_n3chr,
            description="Knight Online character"),
    KoCodec("n3joint", "n3joint", extensions=[".n3joint"], info=info_n3joint,
            variants=_JOINT, allow_trailing=False,  # exactly one key count reaches EOF
            description="Knight Online skeleton"),
    KoCodec("n3fxplug", "n3fxplug", extensions=[".n3fxplug"], info=info_n3fxplug,
            description="Knight Online FX plug"),
    KoCodec("n3anim", "n3anim", extensions=[".n3anim"], info=info_n3anim,
            description="Knight Online animation clips"),
    KoCodec("n3sky", "n3sky", extensions=[".n3sky"], info=info_n3sky,
            description="Knight Online sky"),
    KoCodec("fxb", "fxb", extensions=[".fxb"], info=info_fxb, check=check_fxb,
            description="Knight Online FX bundle"),
    KoCodec("gtd", "gtd", extensions=[".gtd"], info=info_gtd, variants=_GTD,
            allow_trailing=False, foreign=foreign_gtd, description="Knight Online terrain"),
    KoCodec("opd", "opd", extensions=[".opd"], info=info_opd, variants=_OPD,
            allow_trailing=False, foreign=foreign_opd, parameters=("gridCell",),
            description="Knight Online object placement"),
    KoCodec("uif", "uif", extensions=[".uif"], info=info_uif, foreign=foreign_uif,
            allow_trailing=False, parameters=("fileVersion", "spacingPresent", "type"),
            description="Knight Online UI layout"),
]


# ----------------------------------------------------------------------------
# zone export: a .gtd (with the .opd beside it) as one glTF scene (zone.py)


def _zone_to_scene(doc: Document, **options: Any):
    """The gtd terrain, its water and the opd's objects as a neutral scene."""
    from .zone import scene_zone  # zone.py imports this module
    return scene_zone(doc, **options)


#: what ``convert ZONE.gtd ZONE.glb --option name=value`` accepts
ZONE_OPTIONS = (
    Option("opd", str, "object placement file (default: the .opd of the same name beside the .gtd)"),
    Option("objects", bool, "place the .opd's objects (0: terrain and water only)", True),
    Option("collision", bool, "add the .opd's collision triangles as an invisible mesh", False),
)

for _codec in CODECS:
    if _codec.name == "gtd":
        _codec.to_scene = _zone_to_scene
        _codec.export_options = ZONE_OPTIONS
