"""Codecs and the registry that picks one by extension or magic bytes.

A *codec* handles one format (``n3pmesh``, ``dts``, ``fbx``...).  Families
register theirs in ``potsherd.formats.<family>`` by listing them in
``CODECS``; the registry imports the families on first use.

Codec contract (see :class:`Codec`): ``decode(data, **params) -> Document``,
``encode(doc) -> bytes``, ``to_json(doc, form)``, ``from_json(obj)``,
``info(doc)``, and optionally ``to_scene(doc, **opts)`` for glTF export and
``from_scene(scene, like=None, **opts)`` for glTF import.  The options each
direction accepts are declared as :class:`Option` tuples (``export_options``,
``import_options``) so the command line can refuse unknown names and list them.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Iterable, NamedTuple

from .core.errors import (FormatError, InternalDecodeError, JsonFormatError, LimitError,
                          UnknownFormatError)
from .core.layout import JsonCtx, Layout
from .core.limits import DEFAULT_LIMITS, Limits
from .core.spans import SpanMap
from . import document as _document
from .document import Document
from . import families as _families

#: family names, in listing order (the descriptors are in :mod:`potsherd.families`)
FAMILIES = _families.NAMES

JSON_VERSION = 1


class Option(NamedTuple):
    """A family option of a conversion (``--option name=value`` on the command line).

    ``type`` is ``int``, ``float``, ``str`` or ``bool``; :func:`coerce_options`
    turns the command line's text into it."""

    name: str
    type: type
    help: str
    default: Any = None


def coerce_options(declared: Iterable[Option], given: dict, *, what: str = "") -> dict:
    """Check ``given`` against the declared options and convert text values.

    Unknown names raise ``ValueError`` naming the valid ones (a usage error);
    values that are already of the declared type pass unchanged."""
    table = {o.name: o for o in declared}
    out: dict = {}
    for name, value in given.items():
        opt = table.get(name)
        if opt is None:
            valid = ", ".join(sorted(table)) or "none"
            raise ValueError(f"unknown option {name!r}{' for ' + what if what else ''}; "
                             f"valid options: {valid}")
        if isinstance(value, str) and opt.type is not str:
            text = value.strip().lower()
            try:
                if opt.type is bool:
                    if text not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                        raise ValueError(text)
                    value = text in ("1", "true", "yes", "on")
                else:
                    value = opt.type(value)
            except ValueError:
                raise ValueError(f"option {name}={value!r}: expected "
                                 f"{opt.type.__name__}") from None
        out[name] = value
    return out


class ByteSequence(NamedTuple):
    """Bytes a file of a format holds at a fixed place: starting at ``offset``
    from the start of the file, or anywhere from ``offset`` to ``max_offset``."""

    offset: int
    data: bytes
    max_offset: int | None = None

    def matches(self, data: bytes) -> bool:
        last = self.offset if self.max_offset is None else self.max_offset
        if last == self.offset:
            return data[self.offset:self.offset + len(self.data)] == self.data
        return data.find(self.data, self.offset, last + len(self.data)) >= 0


class Signature(NamedTuple):
    """What identifies one version of a format by its bytes (every sequence
    present), for ``potsherd identify`` and the DROID / FIDO signature files.

    ``version`` is "" when the signature holds for every version; ``group``
    names the versions that share a layout (one identifier entry per group,
    "" : the version itself)."""

    version: str
    sequences: tuple[ByteSequence, ...]
    group: str = ""

    def matches(self, data: bytes) -> bool:
        return all(s.matches(data) for s in self.sequences)

    @property
    def entry(self) -> str:
        """The version label of the identifier entry this signature belongs to."""
        return self.group or self.version


class Codec:
    """Base class of a format codec.

    Optional features are declared, not guessed: ``to_scene`` / ``from_scene``
    are ``None`` on codecs without glTF export / import.  A codec with import
    implements ``from_scene(scene, *, like=None, out_name="", out_dir="",
    **options)`` returning a :class:`Document`, or a list of ``(file name,
    Document)`` pairs when the format is several files (the first is the output
    itself; the others are written beside it); lossy choices are appended to
    ``scene.warnings``.  ``out_dir`` is the folder the files go to ("" when
    they are not written), for codecs that look at the game tree around them.
    """

    name: str = ""
    family: str = ""
    description: str = ""
    extensions: tuple[str, ...] = ()
    #: magic bytes at offset 0 that identify the format (None: by extension only)
    magic: bytes | None = None
    #: text encoding for readable JSON and ``info``
    text_encoding: str = "latin-1"
    #: names of parameters users may set with ``--param``
    parameters: tuple[str, ...] = ()
    #: ``to_scene(doc, **options) -> Scene`` (glTF export), or None
    to_scene: Any = None
    #: ``from_scene(scene, *, like=None, out_name="", **options)`` (glTF import), or None
    from_scene: Any = None
    #: options accepted by ``to_scene`` / ``from_scene``
    export_options: tuple[Option, ...] = ()
    import_options: tuple[Option, ...] = ()
    #: ``textures(doc, **options) -> [(name, PNG bytes)]`` (texture extraction), or None
    textures: Any = None
    #: options accepted by ``textures``
    texture_options: tuple[Option, ...] = ()
    #: ``convert(doc, to, **options)``: a same-family transcode (FBX binary <-> ASCII), or None
    convert: Any = None
    #: ``to_csv(doc) -> str``: a table's rows as CSV (access copies of tables), or None
    to_csv: Any = None
    #: the three directions every byte-exact codec has; a codec lacking one says so
    can_read: bool = True
    can_write: bool = True
    can_json: bool = True
    #: ``decode`` accepts a :class:`~potsherd.core.fastpath.PrivateBuffer` (a file
    #: read into memory only the document holds) and may keep views of it;
    #: ``potsherd.read(path)`` then reads into one (no copies of the arrays)
    private_input: bool = False
    #: byte signatures (version words, magic) that identify the format's versions
    #: (:class:`Signature`); None: the ``magic`` bytes at offset 0, for every version
    signatures: tuple[Signature, ...] | None = None
    #: where the codec comes from: "potsherd", or the distribution of a plugin
    #: (set when it is loaded through the ``potsherd.codecs`` entry points)
    origin: str = "potsherd"

    def declared_signatures(self) -> tuple[Signature, ...]:
        """The signatures identifiers match (the ``magic`` bytes unless declared)."""
        if self.signatures is not None:
            return tuple(self.signatures)
        if self.magic:
            return (Signature("", (ByteSequence(0, bytes(self.magic)),)),)
        return ()

    def format_version(self, doc: Document) -> str | None:
        """The version of the format ``doc`` was read as (what ``info`` reports
        as ``version``), as text; None when the format has one version."""
        v = self.info(doc).get("version")
        return None if v is None or v == "" else str(v)

    def features(self) -> dict[str, bool]:
        """What this codec can do, as ``potsherd formats`` shows it."""
        return {"read": self.can_read, "write": self.can_write, "json": self.can_json,
                "export": self.to_scene is not None, "import": self.from_scene is not None,
                "textures": self.textures is not None, "transcode": self.convert is not None}

    def sniff(self, data: bytes) -> bool:
        """True when ``data`` looks like this format (magic bytes by default)."""
        return self.magic is not None and data.startswith(self.magic)

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        raise NotImplementedError

    def encode(self, doc: Document) -> bytes:
        raise NotImplementedError

    def decode_spans(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS,
                     **params: Any) -> tuple[Document, SpanMap]:
        """Decode and record each field's byte range (for the viewer).

        Codecs whose decoder cannot record spans return an empty map."""
        return self.decode(data, limits=limits, **params), SpanMap()

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        raise NotImplementedError

    def from_json(self, obj: dict) -> Document:
        raise NotImplementedError

    def info(self, doc: Document) -> dict:
        return {"format": self.name, "family": self.family}

    def opaque_bytes(self, doc: Document) -> int:
        """Bytes of the file kept raw rather than decoded into fields."""
        return len(doc.trailing)

    def json_envelope(self, doc: Document, form: str, root: Any) -> dict:
        return {
            "potsherd": JSON_VERSION,
            "format": self.name,
            "form": form,
            "params": _params_json(doc.params),
            "meta": doc.meta,
            "trailing": doc.trailing.hex(),
            "root": root,
        }

    def parse_envelope(self, obj: dict) -> Envelope:
        """Check and read ``form``, ``meta``, ``params`` and ``trailing``."""
        form = obj.get("form", "wire")
        meta = obj.get("meta") or {}
        if not isinstance(meta, dict):
            raise JsonFormatError("meta must be an object", path="$.meta")
        try:
            ctx = JsonCtx(form, meta.get("text_encoding", self.text_encoding))
        except (ValueError, TypeError) as e:
            raise JsonFormatError(str(e), path="$.form") from None
        params = obj.get("params") or {}
        if not isinstance(params, dict):
            raise JsonFormatError("params must be an object", path="$.params")
        try:
            trailing = bytes.fromhex(obj.get("trailing") or "")
        except (TypeError, ValueError):
            raise JsonFormatError("trailing must be a hex string", path="$.trailing") from None
        return Envelope(ctx, dict(meta), dict(params), trailing)


def _tail(data: bytes, end: int):
    """The bytes after ``end``: a read-only zero-copy view when large, so a file
    that is mostly undecoded bytes costs its size in memory once, not twice."""
    if len(data) - end >= 1 << 20 and isinstance(data, bytes):
        return memoryview(data)[end:]
    return data[end:] if isinstance(data, bytes) else bytes(memoryview(data)[end:])


class Envelope(NamedTuple):
    """The parts of a JSON document around its root, checked."""

    ctx: JsonCtx
    meta: dict
    params: dict
    trailing: bytes


def _params_json(params: dict) -> dict:
    out = {}
    for k, v in params.items():
        out[k] = v.hex() if isinstance(v, (bytes, bytearray)) else v
    return out


class LayoutCodec(Codec):
    """A codec entirely described by a layout record (plus variants).

    ``variants`` is a list of parameter sets tried in order; the first whose
    parse ends exactly at the end of the input wins, else the first that parses
    at all (its extra bytes are kept in ``Document.trailing`` with a warning).
    The chosen set is stored in ``Document.params`` so the writer can repeat it.
    """

    def __init__(self, name: str, layout: Layout, root: str, *, family: str,
                 extensions: Iterable[str] = (), magic: bytes | None = None,
                 variants: list[dict] | None = None, description: str = "",
                 text_encoding: str = "latin-1", parameters: Iterable[str] = (),
                 allow_trailing: bool = True) -> None:
        self.name = name
        self.layout = layout
        self.root = root
        self.family = family
        self.extensions = tuple(e.lower() for e in extensions)
        self.magic = magic
        self.variants = variants or [{}]
        self.description = description
        self.text_encoding = text_encoding
        self.parameters = tuple(parameters)
        self.allow_trailing = allow_trailing

    def parse_variants(self, data: bytes, limits: Limits, params: dict, *,
                       stop_at_exact: bool = True,
                       trial: bool = True) -> tuple[list[tuple], FormatError | None]:
        """Trial-parse ``data`` with each variant the caller's ``params`` allow.

        Returns the successful parses as ``(root, end, params, warnings)`` in
        variant order (stopping at the first that ends exactly at EOF when
        ``stop_at_exact``), and the error that got furthest into the input.
        """
        results: list[tuple] = []
        first_error: FormatError | None = None
        # variants the compiled decoder proves too long for the input are skipped
        # without wording their error; only when no variant decodes are they
        # tried again on the reference, for the error to report
        trial = trial and len(self.variants) > 1
        skipped = False
        for variant in self.variants:
            # user-supplied parameters override (and restrict) the variants
            if any(k in params and params[k] != v for k, v in variant.items()):
                continue
            warnings: list[str] = []
            try:
                if trial:
                    done = self.layout.trial_decode(self.root, data, {**variant, **params},
                                                    limits, warnings)
                    if done is None:
                        skipped = True
                        continue
                    root, end, p = done
                else:
                    root, end, p = self.layout.decode(self.root, data, {**variant, **params},
                                                      limits, warnings)
            except FormatError as e:
                if first_error is None or (e.offset or 0) > (first_error.offset or 0):
                    first_error = e
                continue
            results.append((root, end, p, warnings))
            if stop_at_exact and end == len(data):
                break
        if skipped and not results:
            # the error to report is the reference's, among all variants
            return self.parse_variants(data, limits, params, stop_at_exact=stop_at_exact,
                                       trial=False)
        return results, first_error

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        results, first_error = self.parse_variants(data, limits, params)
        for root, end, p, warnings in results:
            if end == len(data):
                return Document(self.name, root, p, b"", warnings)
        if results and self.allow_trailing:
            root, end, p, warnings = results[0]
            warnings.append(f"{len(data) - end} bytes after the end of the {self.root} record "
                            f"(offset {end}) kept raw")
            return Document(self.name, root, p, _tail(data, end), warnings)
        if results:
            end = results[0][1]
            raise FormatError(f"{len(data) - end} unexpected bytes after the {self.root} record",
                              offset=end, path=self.root, expected="end of input")
        assert first_error is not None
        raise first_error

    def encode(self, doc: Document) -> bytes:
        return self.layout.encode(self.root, doc.root, doc.params) + bytes(doc.trailing)

    def decode_spans(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS,
                     **params: Any) -> tuple[Document, SpanMap]:
        doc = self.decode(data, limits=limits, **params)  # picks the variant
        spans = SpanMap()
        try:
            root, _, _ = self.layout.decode(self.root, data, doc.params, limits, spans=spans)
        except FormatError:   # a codec's opaque fallback: the document has no fields to map
            return doc, SpanMap()
        doc.root = root
        return doc, spans

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        ctx = JsonCtx(form, doc.meta.get("text_encoding", self.text_encoding))
        return self.json_envelope(doc, form, self.layout.to_json(self.root, doc.root, ctx))

    def from_json(self, obj: dict) -> Document:
        env = self.parse_envelope(obj)
        root = self.layout.from_json(self.root, obj.get("root"), env.ctx, "$.root")
        return Document(self.name, root, env.params, env.trailing, [], env.meta)

    def opaque_bytes(self, doc: Document) -> int:
        return len(doc.trailing) + self.layout.opaque_size(self.root, doc.root)


# ----------------------------------------------------------------------------

_CODECS: dict[str, Codec] = {}
_LOADED = False
#: families imported one by one (detection by extension, a codec named)
_FAMILIES_LOADED: set[str] = set()
#: codecs registered before any family was imported: first in the table, as
#: when every family is imported at once
_EARLY: list[str] = []


def register(codec: Codec) -> Codec:
    if codec.name in _CODECS and _CODECS[codec.name] is not codec:
        raise ValueError(f"codec {codec.name!r} registered twice")
    if not _LOADED and not _FAMILIES_LOADED and codec.name not in _CODECS:
        _EARLY.append(codec.name)
    _CODECS[codec.name] = codec
    _DETECT_INDEX.clear()  # rebuilt on the next detect()
    return codec


#: one family import at a time: a second thread waits for the table to be whole instead of
#: reading it half-filled (the viewer decodes on several threads); re-entrant, since a
#: family's modules may look codecs up while it is being imported
_LOAD_LOCK = threading.RLock()
#: families whose codecs are all registered (``_FAMILIES_LOADED`` is marked on entry)
_FAMILIES_DONE: set[str] = set()
_COMPLETE = False


def _load() -> None:
    global _LOADED, _COMPLETE
    if _COMPLETE:
        return
    with _LOAD_LOCK:
        if _LOADED:         # loaded, or being loaded by this very thread
            return
        _LOADED = True
        partial = bool(_FAMILIES_LOADED) or bool(_CODECS)
        for fam in _families.FAMILIES:
            _load_family(fam)
        if partial:  # the table in the order a load of every family at once gives
            family_codecs = [c.name for fam in _families.FAMILIES for c in fam.codecs()]
            order = dict.fromkeys([n for n in _EARLY if n in _CODECS] + family_codecs
                                  + list(_CODECS))
            table = dict(_CODECS)
            _CODECS.clear()
            _CODECS.update((n, table[n]) for n in order)
            _DETECT_INDEX.clear()
        load_plugins()   # after the built-ins: a plugin never shadows one
        _COMPLETE = True


def load_plugins() -> None:
    """Register the codecs of installed plugins, once (:mod:`potsherd.plugins`)."""
    import sys
    from . import plugins
    plugins.load_plugins(sys.modules[__name__])


def _load_family(fam: Any) -> None:
    if fam.name in _FAMILIES_DONE:
        return
    with _LOAD_LOCK:
        if fam.name in _FAMILIES_LOADED:
            return
        _FAMILIES_LOADED.add(fam.name)
        for c in fam.codecs():
            register(c)
        _FAMILIES_DONE.add(fam.name)


_MANIFEST_INDEX: dict[str, dict[str, set]] = {}


def _manifest_index() -> dict[str, dict[str, set]]:
    """From the generated manifest: "ext" -> {extension: families claiming it},
    "name" -> {codec name: its family}, read once."""
    if not _MANIFEST_INDEX:
        by_ext: dict[str, set] = {}
        by_name: dict[str, set] = {}
        for row in _families.read_manifest():
            for ext in row["extensions"]:
                by_ext.setdefault(ext, set()).add(row["family"])
            by_name.setdefault(row["name"], set()).add(row["family"])
        _MANIFEST_INDEX.update(ext=by_ext, name=by_name)
    return _MANIFEST_INDEX


#: (kind, key) -> the family that alone claims it (from the manifest, once per key)
_SOLE_FAMILY: dict[tuple[str, str], str] = {}


def _load_sole_family(kind: str, key: str) -> None:
    """Import only the family that alone claims ``key`` (an extension or a codec
    name, by the manifest), else every family.  Converting one FBX file then
    imports neither the KO nor the Darkstar nor the TRLE modules (a sixth of
    a short process's start).  Detection gives the same codec as with every
    family loaded: only the codecs claiming an extension are ever compared."""
    if _COMPLETE or _SOLE_FAMILY.get((kind, key)) in _FAMILIES_DONE:
        return  # (read per file: a loaded family costs one look-up)
    fams = _manifest_index()[kind].get(key, ())
    if len(fams) == 1:
        (name,) = fams
        try:
            _load_family(_families.family(name))
            _SOLE_FAMILY[(kind, key)] = name
            return
        except KeyError:  # a manifest older than the families: load them all
            pass
    _load()


def loaded() -> bool:
    """True once the families' codecs are imported."""
    return _LOADED


def codecs() -> list[Codec]:
    _load()
    return list(_CODECS.values())


def cli_hooks(command: str | None = None) -> list:
    """The functions adding family subcommands: all of them, or only the one that
    adds ``command`` (none when a core command is named), so that running a core
    command does not import every family."""
    if command is None:
        wanted = _families.FAMILIES
    else:
        fam = _families.command_family(command)
        wanted = (fam,) if fam is not None else ()
    return [h for h in (f.add_cli() for f in wanted) if h is not None]


def format_rows() -> list[dict]:
    """What every codec declares (name, extensions, magic, features, options).

    From the live codecs once they are loaded (so a codec registered at run time
    is listed), else from the generated manifest, without importing any family."""
    load_plugins()
    if _LOADED:
        return [_families.describe_codec(c) for c in _CODECS.values()]
    rows = _families.read_manifest()
    listed = {r["name"] for r in rows}
    return rows + [_families.describe_codec(c) for c in _CODECS.values() if c.name not in listed]


def get_codec(name: str) -> Codec:
    if name not in _CODECS:
        _load_sole_family("name", name)
        if name not in _CODECS:
            _load()
    try:
        return _CODECS[name]
    except KeyError:
        raise UnknownFormatError(f"unknown format {name!r}; see `potsherd formats`") from None


_document.codec_lookup = get_codec


def _ext_of(path: str) -> str:
    """The lower-case extension of ``path``'s file name, as ``os.path.splitext``
    gives it (leading dots of the name are not an extension); on every read,
    so without its general machinery."""
    base = path[path.rfind(os.sep) + 1:] if os.altsep is None else os.path.basename(path)
    dot = base.rfind(".")
    if dot <= 0 or not base[:dot].strip("."):
        return ""
    return base[dot:].lower()


#: detection tables built once from the registered codecs (rebuilt when they change):
#: "ext" -> {extension: (codecs with magic, first codec accepting without a sniff or None,
#: first codec)}, "magic" -> codecs with magic bytes in registration order
_DETECT_INDEX: dict[str, Any] = {}


def _detect_index() -> dict[str, Any]:
    # rebuilt whenever the codec table differs from the one it was built from
    # (a dict comparison of ~40 identical entries; callers such as tests also
    # add and remove codecs in _CODECS directly, without register())
    if _DETECT_INDEX.get("of") != _CODECS:
        _DETECT_INDEX.clear()
        _DETECT_INDEX["of"] = dict(_CODECS)
        by_ext: dict[str, list[Codec]] = {}
        for c in _CODECS.values():
            for ext in c.extensions:
                group = by_ext.setdefault(ext, [])
                if c not in group:
                    group.append(c)
        _DETECT_INDEX["ext"] = {
            ext: (tuple(c for c in cs if c.magic is not None),
                  next((c for c in cs if c.magic is None), None), cs[0])
            for ext, cs in by_ext.items()}
        _DETECT_INDEX["magic"] = tuple(c for c in _CODECS.values() if c.magic is not None)
    return _DETECT_INDEX


def detect(data: bytes, path: str | None = None) -> Codec:
    """Pick a codec: magic bytes first, then the file extension.

    Among the codecs claiming the extension, the first whose magic matches wins,
    else the first without magic bytes, else the first claiming it; a name no
    codec claims is identified by magic alone.  The tables are built once, so a
    call costs one dictionary look-up and the sniffers of that extension only."""
    ext = _ext_of(path) if path else ""
    if path and not _LOADED:
        _load_sole_family("ext", ext)  # the others claim nothing of it
    else:
        _load()
    index = _detect_index()
    entry = index["ext"].get(ext) if path else None
    if entry is not None:
        with_magic, without_magic, first = entry
        for c in with_magic:
            if c.sniff(data):
                return c
        return without_magic if without_magic is not None else first
    for c in index["magic"]:
        if c.sniff(data):
            return c
    raise UnknownFormatError("no codec recognises this input"
                             + (f" (extension {ext!r})" if path else ""),
                             offset=0, found=data[:8].hex())


def codec_before_reading(path: str, format: str | None = None) -> Codec | None:
    """The codec :func:`decode` will pick for ``path`` before its bytes are read:
    the named format, or the codec the extension gives when no codec claiming
    it has magic bytes to sniff; None when the bytes decide."""
    if format:
        return get_codec(format)
    ext = _ext_of(path)
    if not _LOADED:
        _load_sole_family("ext", ext)
    entry = _detect_index()["ext"].get(ext)
    if entry is None or entry[0]:
        return None
    return entry[1] if entry[1] is not None else entry[2]


def known_extension(path: str) -> bool:
    """Whether a codec claims ``path``'s extension.  Before the families are
    imported the answer comes from the manifest (what every family's codecs
    declare, checked against them by the tests) and the codecs registered so
    far, so walking a folder of FBX files and their textures imports no
    family (reading a file then loads only the one claiming it)."""
    ext = _ext_of(path)
    if not _LOADED:
        return ext in _manifest_index()["ext"] or any(ext in c.extensions
                                                      for c in _CODECS.values())
    return ext in _detect_index()["ext"]


def codecs_claiming(path: str) -> list[Codec]:
    """The codecs claiming ``path``'s extension.  Imports only the family that
    alone claims it by the manifest (else every family), so planning a folder
    of FBX files does not import the other families."""
    ext = _ext_of(path)
    if not _LOADED:
        _load_sole_family("ext", ext)
    return [c for c in _CODECS.values() if ext in c.extensions]


def _checked_codec(data: bytes, format: str | None, path: str | None, limits: Limits) -> Codec:
    if len(data) > limits.max_input:
        raise LimitError(f"input of {len(data)} bytes exceeds the limit of {limits.max_input}",
                         offset=0)
    return get_codec(format) if format else detect(data, path)


def _run_decoder(codec: Codec, run: Any) -> Any:
    """``run()`` with the decoders' safety net: only :class:`FormatError` escapes;
    an unexpected exception inside a codec is a bug, reported as
    :class:`InternalDecodeError` (never a traceback)."""
    try:
        return run()
    except FormatError:
        raise
    except RecursionError:
        raise FormatError("nesting too deep for this decoder") from None
    except MemoryError:
        raise FormatError("out of memory while decoding") from None
    except Exception as e:  # noqa: BLE001 - the safety net: never a traceback
        raise InternalDecodeError(f"internal error in the {codec.name} decoder: "
                                  f"{type(e).__name__}: {e}") from e


def decode(data: bytes, *, format: str | None = None, path: str | None = None,
           limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
    """Decode bytes with the named or detected codec.

    Only :class:`FormatError` escapes; an unexpected exception inside a codec
    is a bug and is reported as :class:`InternalDecodeError`.
    """
    codec = _checked_codec(data, format, path, limits)
    doc = _run_decoder(codec, lambda: codec.decode(data, limits=limits, **params))
    doc.source = path
    doc.limits = limits
    return doc


def decode_as(codec: Codec, data: bytes, *, path: str | None = None,
              limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
    """:func:`decode` with the codec already picked (:func:`codec_before_reading`):
    the same checks and refusals, without detecting it again."""
    if len(data) > limits.max_input:
        raise LimitError(f"input of {len(data)} bytes exceeds the limit of {limits.max_input}",
                         offset=0)
    doc = _run_decoder(codec, lambda: codec.decode(data, limits=limits, **params))
    doc.source = path
    doc.limits = limits
    return doc


def decode_with_spans(data: bytes, *, format: str | None = None, path: str | None = None,
                      limits: Limits = DEFAULT_LIMITS, **params: Any) -> tuple[Document, SpanMap]:
    """:func:`decode`, also returning where each field came from (see
    :mod:`potsherd.core.spans`); the same refusals as :func:`decode`."""
    codec = _checked_codec(data, format, path, limits)
    doc, spans = _run_decoder(codec, lambda: codec.decode_spans(data, limits=limits, **params))
    doc.source = path
    doc.limits = limits
    return doc, spans


def from_json(obj: dict) -> Document:
    if not isinstance(obj, dict):
        raise JsonFormatError("a potsherd JSON document is an object", path="$")
    if obj.get("potsherd") != JSON_VERSION:
        raise JsonFormatError(f"not a potsherd JSON document (version {JSON_VERSION})",
                              path="$.potsherd")
    name = obj.get("format")
    if not isinstance(name, str):
        raise JsonFormatError("missing format name", path="$.format")
    codec = get_codec(name)
    try:
        return codec.from_json(obj)
    except FormatError:
        raise
    except RecursionError:
        raise JsonFormatError("JSON nested too deeply", path="$") from None
    except Exception as e:  # noqa: BLE001
        raise JsonFormatError(f"malformed document: {type(e).__name__}: {e}", path="$") from e
