"""Signature files for the standard identifiers, generated from the codecs'
declarations: a DROID signature file (PRONOM's ``FFSignatureFile`` XML) and the
format XML FIDO loads with ``-loadformats``.

One record per :class:`~.ids.FormatEntry` (a format, or a group of its versions
that differs in layout), carrying the potsherd format id as its PUID.  Versioned
entries have priority over their format's catch-all entry.

Extensions: DROID names a file by extension only for formats without a byte
signature; FIDO falls back to any format's extension when no signature matches,
which would name a Windows bitmap a Phoenix ``.bmp``.  So the FIDO file lists
extensions only for formats that have no signature (the Knight Online files).
"""
from __future__ import annotations

import datetime as _dt
from typing import Iterable
from xml.etree import ElementTree as ET

from ..registry import ByteSequence, Signature
from .ids import FormatEntry, entries

DROID_NS = "http://www.nationalarchives.gov.uk/pronom/SignatureFile"


def _ordered(sig: Signature) -> list[ByteSequence]:
    seqs = sorted(sig.sequences, key=lambda s: s.offset)
    end = 0
    for s in seqs:
        if s.offset < end:
            raise ValueError(f"overlapping byte sequences in a signature: {sig}")
        end = s.offset + len(s.data)
    return seqs


def _gaps(sig: Signature) -> list[tuple[int, int, bytes]]:
    """``(least gap, greatest gap, bytes)`` per sequence, each gap counted from
    the end of the previous sequence (the first from the start of the file)."""
    out, end = [], 0
    for s in _ordered(sig):
        hi = s.offset if s.max_offset is None else s.max_offset
        out.append((s.offset - end, hi - end, s.data))
        end = hi + len(s.data) if s.max_offset is None else s.offset + len(s.data)
    return out


def pronom_pattern(sig: Signature) -> str:
    """The signature in PRONOM's byte-sequence syntax (``{n}``, ``{n-m}`` gaps)."""
    parts = []
    for lo, hi, data in _gaps(sig):
        if hi > lo:
            parts.append(f"{{{lo}-{hi}}}")
        elif lo:
            parts.append(f"{{{lo}}}")
        parts.append(data.hex().upper())
    return "".join(parts)


def regex(sig: Signature) -> str:
    """The signature as the regular expression FIDO matches at the start of a file."""
    parts = [r"(?s)\A"]
    for lo, hi, data in _gaps(sig):
        if hi > lo:
            parts.append(f".{{{lo},{hi}}}")
        elif lo:
            parts.append(f".{{{lo}}}")
        parts.append("".join(f"\\x{b:02x}" for b in data))
    return "".join(parts)


def _name(entry: FormatEntry) -> str:
    return entry.codec.description or entry.codec.name


def _version_label(entry: FormatEntry, all_entries: list[FormatEntry]) -> str:
    if entry.version:
        return entry.version
    siblings = [e for e in all_entries if e.codec is entry.codec and e.version]
    return "other versions" if siblings else ""


def droid_xml(selected: Iterable[FormatEntry] | None = None, *,
              created: str | None = None) -> bytes:
    """A DROID signature file for the entries (every codec's by default)."""
    ents = list(entries() if selected is None else selected)
    ET.register_namespace("", DROID_NS)
    q = lambda tag: f"{{{DROID_NS}}}{tag}"  # noqa: E731
    root = ET.Element(q("FFSignatureFile"), {
        "Version": "1",
        "DateCreated": created or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")})
    sigs_el = ET.SubElement(root, q("InternalSignatureCollection"))
    formats_el = ET.SubElement(root, q("FileFormatCollection"))
    fmt_ids = {e.id: i for i, e in enumerate(ents, 1)}
    sig_id = 0
    for entry in ents:
        own: list[int] = []
        for sig in entry.signatures:
            sig_id += 1
            own.append(sig_id)
            el = ET.SubElement(sigs_el, q("InternalSignature"),
                               {"ID": str(sig_id), "Specificity": "Specific"})
            bs = ET.SubElement(el, q("ByteSequence"), {"Reference": "BOFoffset"})
            for pos, (lo, hi, data) in enumerate(_gaps(sig), 1):
                sub = ET.SubElement(bs, q("SubSequence"), {
                    "MinFragLength": "0", "Position": str(pos),
                    "SubSeqMinOffset": str(lo), "SubSeqMaxOffset": str(hi)})
                ET.SubElement(sub, q("Sequence")).text = data.hex().upper()
        attrs = {"ID": str(fmt_ids[entry.id]), "Name": _name(entry), "PUID": entry.id,
                 "MIMEType": "application/octet-stream"}
        label = _version_label(entry, ents)
        if label:
            attrs["Version"] = label
        ff = ET.SubElement(formats_el, q("FileFormat"), attrs)
        for i in own:
            ET.SubElement(ff, q("InternalSignatureID")).text = str(i)
        for ext in entry.codec.extensions:
            ET.SubElement(ff, q("Extension")).text = ext.lstrip(".")
        for other in entry.priority_over:
            if other in fmt_ids:
                ET.SubElement(ff, q("HasPriorityOverFileFormatID")).text = str(fmt_ids[other])
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True) + b"\n"


def fido_xml(selected: Iterable[FormatEntry] | None = None) -> bytes:
    """FIDO's format XML for the entries (``fido -loadformats FILE``)."""
    ents = list(entries() if selected is None else selected)
    root = ET.Element("formats", {"version": "0.3"})
    for entry in ents:
        fmt = ET.SubElement(root, "format")
        ET.SubElement(fmt, "puid").text = entry.id
        ET.SubElement(fmt, "mime").text = "application/octet-stream"
        ET.SubElement(fmt, "name").text = _name(entry)
        ET.SubElement(fmt, "version").text = _version_label(entry, ents)
        if not entry.signatures:
            for ext in entry.codec.extensions:
                ET.SubElement(fmt, "extension").text = ext.lstrip(".")
        for other in entry.priority_over:
            ET.SubElement(fmt, "has_priority_over").text = other
        for sig in entry.signatures:
            s = ET.SubElement(fmt, "signature")
            ET.SubElement(s, "name").text = (f"{_name(entry)} {sig.version}".strip())
            pat = ET.SubElement(s, "pattern")
            ET.SubElement(pat, "position").text = "BOF"
            ET.SubElement(pat, "pronom_pattern").text = pronom_pattern(sig)
            ET.SubElement(pat, "regex").text = regex(sig)
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True) + b"\n"


def collisions(selected: Iterable[FormatEntry] | None = None) -> list[set[str]]:
    """Sets of entry ids whose signatures are the same bytes, so an identifier
    matching bytes alone names them all (a TR4 ``.swd`` has the wad's version
    word): only the extension or the structure tells them apart."""
    by_bytes: dict[frozenset, set[str]] = {}
    for e in (entries() if selected is None else selected):
        for sig in e.signatures:
            key = frozenset((s.offset, s.max_offset, s.data) for s in sig.sequences)
            by_bytes.setdefault(key, set()).add(e.id)
    return [ids for ids in by_bytes.values() if len(ids) > 1]
