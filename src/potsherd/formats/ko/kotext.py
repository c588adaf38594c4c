"""Knight Online ``key = value`` text files: birds (``.brd``, ``.lst``) and machines
(``.mcn``).

The client reads them with ``sscanf`` line patterns (CBird::LoadBird,
CBirdMng::LoadFromFile, CMachineMng: ``ResourceName = %s``, ``count = %d``...).
Text, not records, so there is no layout: each line is kept as its key, the
separator around ``=``, its value and its line ending, all as stored bytes, so
any file (even one that is not such text) rebuilds byte for byte.
"""
from __future__ import annotations

import re
from typing import Any

from ...core.errors import EncodeError, FormatError, JsonFormatError
from ...core.layout import JsonCtx
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.values import RawString
from ...document import Document
from ...registry import Codec
from .text import CP_DEFAULT, KoString, document_encoding, text

_LINE = re.compile(rb"(.*?)(\r\n|\n|\r|$)", re.S)
_KEY = re.compile(rb"^([^=]*?)([ \t]*=[ \t]*)(.*)$", re.S)
_FIELDS = ("key", "sep", "value", "eol")


def split_lines(data: bytes) -> list[dict]:
    """Lines as {key, sep, value, eol} (a line without ``=``: all in ``value``)."""
    out = []
    pos = 0
    n = len(data)
    while pos < n:
        m = _LINE.match(data, pos)
        body, eol = m.group(1), m.group(2)
        k = _KEY.match(body)
        if k:
            out.append({"key": RawString(k.group(1)), "sep": RawString(k.group(2)),
                        "value": RawString(k.group(3)), "eol": RawString(eol)})
        else:
            out.append({"key": RawString(b""), "sep": RawString(b""), "value": RawString(body),
                        "eol": RawString(eol)})
        pos = m.end()
    return out


class KoTextCodec(Codec):
    """One codec for the three text kinds (they differ only in their keys)."""

    family = "ko"
    text_encoding = CP_DEFAULT

    def __init__(self, name: str, extensions: tuple, description: str) -> None:
        self.name = name
        self.extensions = extensions
        self.description = description

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        if params:
            raise FormatError(f"{self.name} takes no parameters (got {sorted(params)})")
        data = bytes(data)
        if not data:
            raise FormatError("empty file", offset=0, path=self.name)
        if b"\0" in data:
            i = data.index(b"\0")
            raise FormatError("not text: a NUL byte", offset=i, path=self.name)
        return Document(self.name, {"lines": split_lines(data)}, {}, b"", [])

    def _lines(self, root: Any) -> list:
        if not isinstance(root, dict) or not isinstance(root.get("lines"), list):
            raise EncodeError(f"a {self.name} document is {{\"lines\": [...]}}", path=self.name)
        return root["lines"]

    def encode(self, doc: Document) -> bytes:
        out = []
        lines = self._lines(doc.root)
        for i, ln in enumerate(lines):
            if not isinstance(ln, dict) or set(ln) != set(_FIELDS):
                raise EncodeError(f"a line is {{{', '.join(_FIELDS)}}}", path=f"{self.name}.lines[{i}]")
            if ln["eol"] not in (b"\r\n", b"\n", b"\r", b"") or (not ln["eol"] and i != len(lines) - 1):
                raise EncodeError("a line ends in CR LF, LF or CR (only the last in nothing)",
                                  path=f"{self.name}.lines[{i}].eol")
            out.extend(bytes(ln[k]) for k in _FIELDS)
        return b"".join(out) + bytes(doc.trailing)

    def encoding_of(self, doc: Document) -> str:
        return document_encoding(doc)

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        enc = self.encoding_of(doc)
        ctx = JsonCtx(form, enc)
        ks = KoString()
        lines = [{k: ks.to_json(ln[k], ctx) for k in _FIELDS} for ln in self._lines(doc.root)]
        env = self.json_envelope(doc, form, {"lines": lines})
        env["meta"] = {**doc.meta, "text_encoding": enc}
        return env

    def from_json(self, obj: dict) -> Document:
        env = self.parse_envelope(obj)
        root = obj.get("root")
        if not isinstance(root, dict) or not isinstance(root.get("lines"), list):
            raise JsonFormatError("root is {\"lines\": [...]}", path="$.root")
        ks = KoString()
        lines = []
        for i, ln in enumerate(root["lines"]):
            if not isinstance(ln, dict) or set(ln) != set(_FIELDS):
                raise JsonFormatError(f"a line is {{{', '.join(_FIELDS)}}}",
                                      path=f"$.root.lines[{i}]")
            lines.append({k: ks.from_json(ln[k], env.ctx, f"$.root.lines[{i}].{k}")
                          for k in _FIELDS})
        return Document(self.name, {"lines": lines}, env.params, env.trailing, [], env.meta)

    def info(self, doc: Document) -> dict:
        enc = self.encoding_of(doc)
        entries = [[text(ln["key"], enc), text(ln["value"], enc)] for ln in doc.root["lines"]
                   if ln["sep"]]
        return {"format": self.name, "family": self.family, "lines": len(doc.root["lines"]),
                "entries": entries}


CODECS = [
    KoTextCodec("brd", (".brd",), "Knight Online bird (key = value text)"),
    KoTextCodec("lst", (".lst",), "Knight Online bird list (count = n, then .brd paths)"),
    KoTextCodec("mcn", (".mcn",), "Knight Online machine (catapult: key = value text)"),
]
