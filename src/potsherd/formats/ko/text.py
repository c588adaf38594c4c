"""Knight Online text: stored bytes are authoritative; the readable view decodes each
string in the client's code page (cp949, cp950 for Taiwan-client ``*_tw`` files)."""
from __future__ import annotations

import functools
import os
from typing import Any

from ...core.layout import JsonCtx, String, _jerr
from ...core.values import RawString

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
    """The spec's ``string`` with the text view of docs/formats/knight-online.md.

    Readable JSON shows the file's code page (cp949, or cp950 for ``_tw``
    files) where it round-trips, else the other code page as
    ``{"text": ..., "encoding": ...}``, else ``{"hex": ...}``.
    """

    #: the wire form is the plain string's, and an empty string is "" in both
    #: forms (compiled JSON conversion inlines them)
    wire_json_is_string = True
    #: a JSON string loads as the plain string's does (compiled loading inlines it)
    json_str_is_plain = True

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
    return _encoding_for_name(name) if name else CP_DEFAULT


@functools.lru_cache(maxsize=4096)
def _encoding_for_name(name: str) -> str:
    # (asked once per conversion of a document: a folder's names, each split once)
    stem = os.path.splitext(os.path.basename(name))[0].lower()
    return CP_TAIWAN if stem.endswith("_tw") else CP_DEFAULT


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


def document_encoding(doc) -> str:
    """The code page of a document's texts: the one its JSON named (kept in ``meta``),
    else the one its file name implies (``_tw`` files are cp950)."""
    enc = doc.meta.get("text_encoding")
    return enc if enc in (CP_DEFAULT, CP_TAIWAN) else text_encoding_for(doc.source)
