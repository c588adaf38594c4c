"""Knight Online record codecs, all driven by the wire layout ``layouts/ko.layout``.

Each top-level record of the layout is one codec.  Per-file variants (format
docs/formats/knight-online.md) are layout parameters, picked by trial parse in the order
given by ``variants`` and stored in ``Document.params`` (the writer repeats
them); ``--param name=value`` / keyword arguments override them.

Opaque fallback rule (docs/formats/knight-online.md: unknown layouts round-trip as opaque
files with a warning).  A file is kept whole as raw bytes, in a document with
``params = {"opaque": 1}`` and a warning, only when all of these hold:

1. no variant of its record parses, and no parameter was given explicitly;
2. the codec has a ``foreign`` test (n3shape, opd, gtd, uif: the formats the
   documentation lists with foreign files) and it recognises the bytes:
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

import dataclasses

from typing import Any, Callable

from ...core.errors import EncodeError, FormatError, JsonFormatError
from ...core.layout import JsonCtx
from ...core.limits import DEFAULT_LIMITS, Limits
from ...document import Document
from ...registry import LayoutCodec, Option
from .info import (info_fxb, info_gtd, info_n3anim, info_n3chr, info_n3cpart, info_n3cplug,
                   info_n3cskins, info_n3fxplug, info_n3joint, info_n3pmesh, info_n3shape,
                   info_n3sky, info_opd, info_uif)
from .info import info_glo, info_n3camera, info_n3light, info_n3scene, info_n3vmesh, info_opdext
from .info import replay_pmesh  # noqa: F401  (imported from here by callers)
from .sniff import check_fxb, foreign_gtd, foreign_opd, foreign_shape, foreign_uif
from .text import CP_DEFAULT, CP_TAIWAN, document_encoding
from .text import KoString, text  # noqa: F401  (imported from here by callers)
from .wire import LAYOUT


FAMILY = "ko"


# ----------------------------------------------------------------------------
# codec


#: formats with a glTF conversion (``scene.py``; docs/formats/knight-online.md, "To glTF")
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
        from .scene import SCENES  # imported when first used
        return SCENES[name](doc, **options)
    to_scene.__doc__ = f"The {name} document as a neutral scene (glTF export)."
    return to_scene


#: formats with a glTF import (``importing/``)
IMPORT_FORMATS = ("n3pmesh", "n3shape", "n3cskins", "n3cpart", "n3cplug", "n3joint", "n3anim",
                  "n3chr")
_NO_LOD = Option("lod", int, "1 (default): generate the progressive mesh (edge collapses and "
                 "LOD records); 0: full detail only", 1)
_NO_LOD_ALIAS = Option("no_lod", bool, "full detail only (same as lod=0)", False)
_NAME = Option("name", str, "the name stored in the file (default: the glTF's)")
_ENCRYPT = Option("encrypt", bool, "write referenced textures as NTF7 (encrypted)", False)
_TEXTURES = Option("textures", bool, "write the glTF's images as NTF .dxt textures beside the "
                   "output (default on for .n3chr/.n3cpart/.n3cplug/.n3shape)", True)
_FOLDER = Option("folder", str, "client folder the written references name (chr for .n3chr, "
                 "item for parts and plugs, object for shapes; the client resolves folder\\file "
                 "from its data root)")
IMPORT_OPTIONS = {
    "n3pmesh": (_NO_LOD, _NO_LOD_ALIAS, _NAME),
    "n3shape": (_NO_LOD, _NO_LOD_ALIAS, _NAME, _TEXTURES, _ENCRYPT, _FOLDER),
    "n3cskins": (_NO_LOD, _NO_LOD_ALIAS, _NAME),
    "n3cpart": (_NO_LOD, _NO_LOD_ALIAS, _NAME, _TEXTURES, _ENCRYPT, _FOLDER),
    "n3cplug": (_NO_LOD, _NO_LOD_ALIAS, _NAME, _TEXTURES, _ENCRYPT, _FOLDER),
    "n3joint": (_NAME,),
    "n3anim": (),
    "n3chr": (_NO_LOD, _NO_LOD_ALIAS, _NAME, _TEXTURES, _ENCRYPT, _FOLDER),
}


def _scene_importer(name: str):
    def from_scene(scene: Any, *, like: Document | None = None, out_name: str = "",
                   out_dir: str = "", **options: Any):
        from ...scene.finite import require_finite
        from ...scene.ops import from_time_zero
        if name == "n3shape":            # (it builds on .importing)
            from .importing.shape import import_shape as fn
        else:
            from .importing import IMPORTERS  # imported when first used (it is large)
            fn = IMPORTERS[name]
        require_finite(scene)
        if name in IMPORT_HOLDS:
            from ...scene.import_prep import prepare
            holds = IMPORT_HOLDS[name]
            if not options.get("textures", True) and holds.texture:  # no .dxt written:
                holds = dataclasses.replace(holds, texture=False)     # colours named, not baked
            scene = prepare(scene, holds)
        return fn(from_time_zero(scene), like=like, out_name=out_name, **options)
    from_scene.__doc__ = f"A neutral scene (glTF import) as {name} file(s)."
    return from_scene


def _holds(name: str, names_morph_loss: bool = True):
    from ...scene.import_prep import Holds
    bare = name in ("n3pmesh", "n3cskins")   # (their texture is named by a part, plug or shape)
    return Holds(name, normals=True, vertex_colors=False, morph_targets=False,
                 names_morph_loss=names_morph_loss, texture=not bare, materials=not bare,
                 materials_elsewhere="import to .n3cpart, .n3cplug or .n3shape, which write "
                                     "the texture and name it" if bare else "")


#: what each KO mesh format stores of a glTF (scene.import_prep): normals, no vertex
#: colours (baked into the texture of the formats that name one), no morph targets
#: (the importers with ``_warn_static`` name those)
IMPORT_HOLDS = {n: _holds(n, n != "n3shape" and n != "n3chr")
                for n in ("n3pmesh", "n3cskins", "n3cpart", "n3cplug", "n3shape", "n3chr")}


class KoCodec(LayoutCodec):
    """A layout codec with the opaque fallback (module docstring) and text encodings."""

    #: set per instance for the formats of SCENE_FORMATS / IMPORT_FORMATS
    to_scene = None
    from_scene = None
    #: a file read into a private buffer is decoded in place (arrays are views of
    #: it): the layout decoders and the sniffers only read it; an opaque body is copied
    private_input = True

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
        body = data if isinstance(data, bytes) else bytes(data)  # never the reader's buffer
        return Document(self.name, {"body": body}, {"opaque": 1}, b"", [why])

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
        return document_encoding(doc)

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        enc = self.encoding_of(doc)
        ctx = JsonCtx(form, enc)
        root = self.layout.to_json(self._root_of(doc), doc.root, ctx)
        env = self.json_envelope(doc, form, root)
        env["meta"] = {**doc.meta, "text_encoding": enc}
        return env

    def from_json(self, obj: dict) -> Document:
        """The shared envelope (:meth:`Codec.parse_envelope`), plus what KO adds:
        the text encoding is cp949 or cp950 and every parameter is a number."""
        meta = obj.get("meta")
        enc = meta.get("text_encoding", CP_DEFAULT) if isinstance(meta, dict) else CP_DEFAULT
        if enc not in (CP_DEFAULT, CP_TAIWAN):
            raise JsonFormatError("text_encoding must be cp949 or cp950", path="$.meta.text_encoding")
        env = self.parse_envelope(obj)
        for k, v in env.params.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise JsonFormatError("parameters are numbers", path=f"$.params.{k}")
        root_name = "opaqueFile" if env.params.get("opaque") else self.root
        root = self.layout.from_json(root_name, obj.get("root"), env.ctx, "$.root")
        return Document(self.name, root, env.params, env.trailing, [], env.meta)

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


class TltCodec(KoCodec):
    """``.tlt`` light maps: the patch grid size and the number of patches stored
    are not in the file (the grid is the gtd's); they follow from the offset
    table, whose first non-zero entry is the end of the table (4 + 4 n^2), or,
    with no light map at all, the file is the bare table."""

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        if "patchCount" not in params or "patchBlocks" not in params:
            found = tlt_grid(data)
            if found is not None:
                params = {"patchCount": found[0], "patchBlocks": found[1], **params}
        return super().decode(data, limits=limits, **params)


def tlt_grid(data: bytes) -> tuple[int, int] | None:
    """(patches per side, patches stored) of a light-map file, or None: the
    smallest side whose table's least non-zero offset is the table's end (or,
    with none, whose table is the whole file), with no negative offset and
    every offset inside the file.  Prefix minima and maxima make each side an
    O(1) test (a file of n bytes costs O(n), whatever it holds)."""
    import numpy as np
    n = len(data)
    if n < 8:
        return None
    words = np.frombuffer(data, "<i4", (n - 4) // 4, 4).astype(np.int64)
    big = np.int64(1) << 40
    low = np.minimum.accumulate(np.where(words > 0, words, big))
    high = np.maximum.accumulate(words)
    negative = np.maximum.accumulate(words < 0)
    present = np.cumsum(words > 0)
    side = 1
    while side * side <= len(words):
        k = side * side - 1
        end = 4 + 4 * side * side
        if not negative[k] and high[k] < n and (
                (present[k] and low[k] == end) or (not present[k] and end == n)):
            return side, int(present[k])
        side += 1
    return None


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
    # tool-side and zone side files (docs/formats/knight-online.md, "Other client files")
    KoCodec("n3vmesh", "n3vmesh", extensions=[".n3vmesh"], info=info_n3vmesh,
            allow_trailing=False, description="Knight Online collision / climb mesh (CN3VMesh)"),
    KoCodec("n3light", "n3light", extensions=[".n3light"], info=info_n3light,
            allow_trailing=False, description="Knight Online light (CN3Light)"),
    KoCodec("n3camera", "n3camera", extensions=[".n3camera"], info=info_n3camera,
            variants=[{"cameraLayout": 0}, {"cameraLayout": 1}], parameters=("cameraLayout",),
            description="Knight Online camera (CN3Camera)"),
    KoCodec("n3scene", "n3scene", extensions=[".n3scene"], info=info_n3scene,
            allow_trailing=False, description="Knight Online scene (CN3Scene)"),
    KoCodec("gmd", "gmd", extensions=[".gmd"], allow_trailing=False,
            description="Knight Online zone game-map data (zone id + comment)"),
    KoCodec("gev", "gev", extensions=[".gev"], allow_trailing=False,
            description="Knight Online zone events (rectangles and types)"),
    KoCodec("glo", "glo", extensions=[".glo"], info=info_glo, allow_trailing=False,
            description="Knight Online zone lights (CN3Light list)"),
    KoCodec("grs", "grs", extensions=[".grs"], allow_trailing=False,
            description="Knight Online grass kinds (ids and textures)"),
    KoCodec("flag", "flag", extensions=[".flag", ".gfo"], allow_trailing=False,
            description="Knight Online zone flags (.flag, .gfo)"),
    KoCodec("opdext", "opdext", extensions=[".opdext"], allow_trailing=False, info=info_opdext,
            parameters=("gridCell",),
            description="Knight Online collision data of newer zones (.opdext)"),
    KoCodec("opdsub", "opdsub", extensions=[".opdsub"], allow_trailing=False,
            description="Knight Online object placement sub-table"),
    TltCodec("tlt", "tlt", extensions=[".tlt"], allow_trailing=False,
             parameters=("patchCount", "patchBlocks"),
             description="Knight Online zone light maps (per-patch NTF tiles)"),
    KoCodec("ens", "ens", extensions=[".ens"],
            description="Knight Online zone environment sounds (header only known)"),
]


# ----------------------------------------------------------------------------
# zone export: a .gtd (with the .opd beside it) as one glTF scene (zone.py)


def _zone_to_scene(doc: Document, **options: Any):
    """The gtd terrain, its water and the opd's objects as a neutral scene."""
    from .zone import scene_zone  # imported when first used
    return scene_zone(doc, **options)


#: what ``convert ZONE.gtd ZONE.glb --option name=value`` accepts
ZONE_OPTIONS = (
    Option("opd", str, "object placement file (default: the .opd of the same name beside the .gtd)"),
    Option("objects", bool, "place the .opd's objects (0: terrain and water only)", True),
    Option("collision", bool, "add the .opd's collision triangles as an invisible mesh", False),
    Option("lightmap", str, "light map (.tlt) drawn over the terrain (default: the .tlt of the "
           "same name beside the .gtd; 0: none)"),
    Option("lights", str, "zone lights (.glo) as KHR_lights_punctual lights (default: the .glo "
           "of the same name beside the .gtd; 0: none)"),
    Option("colormap", str, "colour map (.tct) on the tiles without a tile texture (default: the "
           ".tct of the same name beside the .gtd; 0: none, a plain colour)"),
    Option("grass", bool, "the gtd's grass as points (textures named by misc\\grass\\*.grs)", True),
)

for _codec in CODECS:
    if _codec.name == "gtd":
        _codec.to_scene = _zone_to_scene
        _codec.export_options = ZONE_OPTIONS


# ----------------------------------------------------------------------------
# lights, cameras and scenes (scene_lights.py): KHR_lights_punctual and glTF cameras


def _lights_exporter(fn_name: str):
    def to_scene(doc: Document, **options: Any):
        from . import scene_lights  # imported when first used
        return getattr(scene_lights, fn_name)(doc, **options)
    to_scene.__doc__ = f"The document as a neutral scene ({fn_name})."
    return to_scene


_LIGHT_EXPORTS = {"n3light": ("scene_light", (_DATA_ROOT,)),
                  "glo": ("scene_glo", (_DATA_ROOT,)),
                  "n3camera": ("scene_camera", (_DATA_ROOT,)),
                  "n3scene": ("scene_n3scene", (_LOD, _DATA_ROOT, _FX)),
                  "n3vmesh": ("scene_vmesh", ())}
for _codec in CODECS:
    if _codec.name in _LIGHT_EXPORTS:
        _fn, _opts = _LIGHT_EXPORTS[_codec.name]
        _codec.to_scene = _lights_exporter(_fn)
        _codec.export_options = _opts
