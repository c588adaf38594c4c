"""``potsherd identify``: what each file is, in archivists' terms.

For each file (and each member of an archive, ``ARCHIVE::member``) the format,
its version, the stable id its signatures carry (:mod:`.ids`) and what decided
it (the ``basis``):

- ``version word``: a declared signature naming one version matched;
- ``magic``: the format's magic bytes matched (the version, if any, read by decoding);
- ``structure``: no magic exists; the codec claiming the extension decoded the file
  completely by its layout;
- ``extension-only``: ``deep=False`` and no magic exists: the extension is all there is.

A file nothing recognises is reported unknown with the reason; a format is never
guessed from the extension alone unless the caller asked for the fast mode.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Iterator

from .. import containers, registry
from ..core.errors import FormatError
from ..core.limits import DEFAULT_LIMITS, Limits
from ..registry import Codec, Signature
from .ids import format_id, id_for

BASES = ("version word", "magic", "structure", "extension-only")


@dataclass
class Identification:
    """One file's identification (``format`` None: unknown)."""

    path: str
    size: int
    family: str | None = None
    format: str | None = None
    version: str | None = None
    id: str | None = None
    basis: str | None = None
    #: True: decoded completely; False: its signature matched but it does not decode;
    #: None: not decoded (``deep=False``)
    valid: bool | None = None
    #: why it is unknown, or what is wrong with it
    error: str | None = None
    #: e.g. the extension belongs to another format than the bytes
    note: str | None = None
    #: bytes of the file kept raw rather than decoded into fields (None: not decoded);
    #: a file kept whole is named by the reader that keeps it, not understood by it
    opaque_bytes: int | None = None
    #: what the reader noticed (a Targa image under a texture's name, trailing bytes)
    warnings: list | None = None

    def to_dict(self) -> dict:
        return asdict(self)


#: codec -> its declared signatures, versioned ones first (read once per codec)
_SIGS: dict[int, tuple] = {}


def _sigs(codec: Codec) -> tuple[Signature, ...]:
    got = _SIGS.get(id(codec))
    if got is None or got[0] is not codec:
        sigs = codec.declared_signatures()
        got = _SIGS[id(codec)] = (codec, tuple(sorted(sigs, key=lambda s: not s.version)))
    return got[1]


def _signature_hit(codec: Codec, data: bytes) -> Signature | None:
    """The codec's best matching declared signature (a versioned one first), if
    the codec's own sniffer also accepts the bytes."""
    sigs = _sigs(codec)
    if not sigs:
        return None
    hit = next((s for s in sigs if s.matches(data)), None)
    if hit is None or not codec.sniff(data):
        return None
    return hit


def _ext(name: str) -> str:
    return registry._ext_of(name)


def identify_bytes(data: bytes, name: str, *, deep: bool = True,
                   limits: Limits = DEFAULT_LIMITS) -> Identification:
    """Identify ``data`` read from a file called ``name`` (the name's extension
    is one piece of evidence; the bytes decide)."""
    if not data:
        return Identification(name, 0, error="empty file (0 bytes): nothing to identify")
    claimers = registry.codecs_claiming(name)
    everyone = registry.codecs()
    result = Identification(name, len(data))
    ext = _ext(name)

    # 1. a signature of a codec claiming the extension, as the registry detects
    for codec in claimers:
        sig = _signature_hit(codec, data)
        if sig is not None:
            return _finish(result, codec, sig, data, name, deep, limits)
    # 2. no signature decides: the claimers that have none to check, by structure
    errors: list[str] = []
    absent: list[Codec] = []
    by_name: Codec | None = None   # the fast mode's answer, unless a signature says otherwise
    for codec in claimers:
        if _sigs(codec) and not by_extension(codec):
            absent.append(codec)
            continue
        if not deep:
            by_name = by_name or codec
            continue
        try:
            doc = registry.decode_as(codec, data, path=name, limits=limits)
        except FormatError as e:
            errors.append(f"not {codec.name}: {e}")
            continue
        return _decoded(result, codec, doc, "structure", data, name, deep, limits)
    # 3. the bytes carry another format's signature than the extension says
    for codec in everyone:
        if codec in claimers:
            continue
        sig = _signature_hit(codec, data)
        if sig is not None:
            if claimers:
                result.note = (f"extension {ext} is that of "
                               f"{', '.join(c.name for c in claimers)}; the bytes are {codec.name}")
            return _finish(result, codec, sig, data, name, deep, limits)
    if by_name is not None:
        result.family, result.format = by_name.family, by_name.name
        result.id, result.basis = id_for(by_name, None), "extension-only"
        return result
    # 4. a claimer whose signature is absent is not named, even when its reader
    #    would decode the bytes (a RIFF palette reader reads any RIFF form, WAVE
    #    too): the error says so, for a codec that should declare the variant
    for codec in absent:
        why = f"not {codec.name}: its signature is absent"
        if deep:
            try:
                registry.decode_as(codec, data, path=name, limits=limits)
                why += " (its reader decodes the bytes: a variant none of its signatures describes?)"
            except FormatError:
                pass
        errors.append(why)
    result.error = "; ".join(errors) if errors else (
        f"no format has a signature matching these bytes"
        + (f" and none claims the extension {ext}" if ext else ""))
    return result


_BY_EXTENSION: dict[int, tuple] = {}


def by_extension(codec: Codec) -> bool:
    """True for a codec whose sniffer refuses even its own declared signature
    bytes: its magic is another format's (a TR4 sprite file has the wad's
    version word), so only the extension and the structure tell it apart."""
    got = _BY_EXTENSION.get(id(codec))
    if got is None or got[0] is not codec:
        got = _BY_EXTENSION[id(codec)] = (codec, _by_extension(codec))
    return got[1]


def _by_extension(codec: Codec) -> bool:
    sigs = _sigs(codec)
    if not sigs:
        return True
    for sig in sigs:
        size = max(s.offset + len(s.data) for s in sig.sequences)
        buf = bytearray(size + 64)
        for s in sig.sequences:
            buf[s.offset:s.offset + len(s.data)] = s.data
        if codec.sniff(bytes(buf)):
            return False
    return True


def _id(codec: Codec, version: str | None, data: bytes) -> str:
    """The id the signature files give these bytes: a versioned entry's only
    when one of its signatures matches them (a version read by decoding that
    no signature shows keeps the format's id)."""
    if version:
        for sig in _sigs(codec):
            if sig.version == version and sig.entry and sig.matches(data):
                return format_id(codec, sig.entry)
    return format_id(codec)


def _finish(result: Identification, codec: Codec, sig: Signature, data: bytes, name: str,
            deep: bool, limits: Limits) -> Identification:
    basis = "version word" if sig.version else "magic"
    result.family, result.format = codec.family, codec.name
    result.version = sig.version or None
    result.id, result.basis = _id(codec, result.version, data), basis
    if not deep:
        return result
    try:
        doc = registry.decode_as(codec, data, path=name, limits=limits)
    except FormatError as e:
        result.valid, result.error = False, f"{type(e).__name__}: {e}"
        return result
    return _decoded(result, codec, doc, basis, data, name, deep, limits)


def _decoded(result: Identification, codec: Codec, doc, basis: str, data: bytes, name: str,
             deep: bool, limits: Limits) -> Identification:
    result.family, result.format, result.basis, result.valid = \
        codec.family, codec.name, basis, True
    try:
        result.opaque_bytes = int(codec.opaque_bytes(doc))
    except Exception:  # noqa: BLE001 - a report of the document is not its identity
        result.opaque_bytes = None
    result.warnings = list(doc.warnings)
    if result.version is None:
        try:
            result.version = codec.format_version(doc)
        except Exception:  # noqa: BLE001 - a report of the document is not its identity
            result.version = None
    result.id = _id(codec, result.version, data)
    result._doc = doc  # type: ignore[attr-defined] - for the member walk, dropped after
    return result


def _members(result: Identification, data: bytes, deep: bool,
             limits: Limits) -> Iterator[Identification]:
    doc = getattr(result, "_doc", None)
    if doc is None:
        return
    del result._doc  # type: ignore[attr-defined]
    codec = doc.codec
    if not hasattr(codec, "member_names"):
        return
    for member in codec.member_names(doc):
        path = f"{result.path}{containers.SEPARATOR}{member}"
        try:
            mdata = codec.read_member(doc, member)
        except FormatError as e:
            yield Identification(path, 0, error=f"member unreadable: {e}")
            continue
        yield from _with_members(identify_bytes(mdata, member, deep=deep, limits=limits),
                                 mdata, path, deep, limits)


def _with_members(found: Identification, data: bytes, path: str, deep: bool,
                  limits: Limits) -> Iterator[Identification]:
    found.path = path
    yield found
    yield from _members(found, data, deep, limits)
    if hasattr(found, "_doc"):
        del found._doc  # type: ignore[attr-defined]


def identify_file(path: str, *, deep: bool = True, members: bool = True,
                  limits: Limits = DEFAULT_LIMITS) -> Iterator[Identification]:
    """The file's identification, then (``members``) those of its archive members.
    ``path`` may name an archive member (``game.vol::shape.dts``)."""
    try:
        data = containers.read_input(path, limits)
    except (OSError, FormatError) as e:
        yield Identification(path, 0, error=f"unreadable: {e}")
        return
    found = identify_bytes(data, containers.member_name(path), deep=deep, limits=limits)
    found.path = path
    if not members:
        found.__dict__.pop("_doc", None)
        yield found
        return
    yield from _with_members(found, data, path, deep, limits)


def identify(paths: Iterable[str], *, deep: bool = True, members: bool = True,
             limits: Limits = DEFAULT_LIMITS) -> Iterator[Identification]:
    """Identify every file named or under a named folder (sorted; the walk of
    :func:`potsherd.api.walk_inputs`), one result at a time."""
    from ..api import walk_inputs
    for entry in walk_inputs(paths):
        if entry.skipped is not None or entry.error is not None:
            yield Identification(entry.path, 0,
                                 error=f"not read: {entry.error or entry.skipped}")
            continue
        yield from identify_file(entry.path, deep=deep, members=members, limits=limits)
