"""Stable potsherd format ids and the identifier entries they name.

A format's id is ``potsherd/<family>/<codec>``; a group of versions that shares
a layout and has a signature of its own adds ``/v<versions>``
(``potsherd/darkstar/dts/v7``, ``potsherd/fbx/fbx/v7500-7700``).  The ids are
derived here and only here, from the codecs' declarations; the signature files,
``identify`` and the bundle metadata all carry them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from .. import registry
from ..registry import Codec, Signature

PREFIX = "potsherd"


def format_id(codec: Codec, entry: str = "") -> str:
    """The id of ``codec``'s format, or of one of its versioned entries."""
    base = f"{PREFIX}/{codec.family}/{codec.name}"
    return f"{base}/v{entry}" if entry else base


@dataclass(frozen=True)
class FormatEntry:
    """One record of the signature files: a format, or a group of its versions
    that differs in layout, with the signatures naming it."""

    id: str
    codec: Codec
    #: the versions' label ("" : every version the other entries do not name)
    version: str
    signatures: tuple[Signature, ...]
    #: ids of entries this one wins over when both match (the catch-all of its format)
    priority_over: tuple[str, ...] = field(default=())

    @property
    def versions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.version for s in self.signatures if s.version))


def codec_entries(codec: Codec) -> list[FormatEntry]:
    """The entries of one codec: one per signature group, versioned ones first
    (each beats the catch-all); a codec without signatures is one entry that
    identifiers can only name by extension."""
    groups: dict[str, list[Signature]] = {}
    for sig in codec.declared_signatures():
        groups.setdefault(sig.entry, []).append(sig)
    if not groups:
        return [FormatEntry(format_id(codec), codec, "", ())]
    base = format_id(codec)
    out = [FormatEntry(format_id(codec, label), codec, label, tuple(sigs),
                       (base,) if "" in groups else ())
           for label, sigs in groups.items() if label]
    if "" in groups:
        out.append(FormatEntry(base, codec, "", tuple(groups[""])))
    return out


def entries(codecs: Iterable[Codec] | None = None) -> list[FormatEntry]:
    """Every codec's entries, in registry order."""
    return [e for c in (registry.codecs() if codecs is None else codecs)
            for e in codec_entries(c)]


def id_for(codec: Codec, version: str | None) -> str:
    """The id a file of ``codec`` at ``version`` carries: its versioned entry's
    when one names that version, else the format's."""
    if version:
        for sig in codec.declared_signatures():
            if sig.version == version and sig.entry:
                return format_id(codec, sig.entry)
    return format_id(codec)
