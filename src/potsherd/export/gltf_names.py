"""Names and text in a written glTF: unique node/mesh/material names (Blender's ``.001``
suffixes), strings made valid UTF-8 (escapes for undecodable bytes), safe URI stems."""
from __future__ import annotations

import math
import os
from typing import Any

from ..scene.model import unique_labels


def unique_names(gl: dict) -> None:
    """Give nodes (joints included) and animations names unique in their list.

    Importers such as assimp refuse a file whose skeleton repeats a joint name
    (Knight Online skeletons repeat ``end_site``, clip lists repeat ``run``).
    The first holder keeps the name; later ones become ``name.001``, ... and
    keep the stored name in ``extras.originalName``."""
    for key in ("nodes", "animations"):
        items = gl.get(key) or []
        for d, new in zip(items, unique_labels([d.get("name") for d in items], digits=3)):
            name = d.get("name")
            if new == name:
                continue
            d["name"] = new
            extras = d.get("extras")
            if not isinstance(extras, dict):
                extras = {} if extras is None else {"value": extras}
            d["extras"] = {**extras, "originalName": name}


def valid_text(value: Any) -> Any:
    """``value`` with every string made valid UTF-8.

    Names taken from file names the OS gave as undecodable bytes (cp949 file
    names of Korean clients on a UTF-8 system) arrive as surrogate escapes,
    which JSON cannot encode.  Their bytes are read as cp949 when that decodes,
    else as UTF-8 with replacement characters."""
    if isinstance(value, str):
        return _valid_str(value)
    if isinstance(value, dict):
        return {_valid_str(k) if isinstance(k, str) else k: valid_text(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [valid_text(v) for v in value]
    return value


def _valid_str(text: str) -> str:
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    raw = text.encode("utf-8", "surrogateescape") if _only_escapes(text) else \
        text.encode("utf-8", "surrogatepass")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp949")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")


def _only_escapes(text: str) -> bool:
    """True when every surrogate in ``text`` is a surrogateescape of one byte."""
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in text)


def _uri_stem(stem: str) -> str:
    """A file-name stem as URI text: unchanged when it is valid UTF-8, else its
    raw bytes percent-encoded (so the URI still names the file on disk)."""
    try:
        stem.encode("utf-8")
        return stem
    except UnicodeEncodeError:
        from urllib.parse import quote
        return quote(os.fsencode(stem))


def _finite(values: list, default: float) -> list:
    return [v if math.isfinite(v) else default for v in values]


def _safe_name(name: str) -> str:
    keep = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
    return keep.strip("._")[:80]
