"""potsherd: read, write and convert the 3D asset formats of classic games.

>>> import potsherd
>>> doc = potsherd.read("sword.n3pmesh")          # format picked from bytes/extension
>>> doc.root["vertexCount"]
>>> data = potsherd.write(doc)                      # byte-identical to the input
>>> j = doc.to_json("readable")                     # lossless JSON
>>> potsherd.write(potsherd.from_json(j)) == data
True
"""
from __future__ import annotations

import os
from typing import Any

from .core.errors import (CountError, EncodeError, FormatError, InternalDecodeError,
                          JsonFormatError, LimitError, MagicError, TruncatedError,
                          UnknownFormatError)
from .core.limits import DEFAULT_LIMITS, Limits
from .document import Document
from . import registry as _registry
from . import formats  # noqa: E402  (callable: potsherd.formats() == list_formats())

__version__ = "0.1.0"

__all__ = [
    "read", "write", "from_json", "formats", "list_formats", "Document", "Limits",
    "FormatError", "TruncatedError", "CountError", "MagicError", "LimitError",
    "JsonFormatError", "EncodeError", "UnknownFormatError", "InternalDecodeError",
    "import_gltf",
]


def read(source: str | os.PathLike | bytes, format: str | None = None, *,
         limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
    """Decode a file (path) or bytes.  ``format`` overrides detection;
    keyword parameters override layout parameters (e.g. ``gridCell=16``)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _registry.decode(bytes(source), format=format, limits=limits, **params)
    from .api import read_input
    path = os.fspath(source)
    data = read_input(path, limits, stdio=False)
    return _registry.decode(data, format=format, path=path, limits=limits, **params)


def write(doc: Document, path: str | os.PathLike | None = None) -> bytes:
    """Encode a document; also write it (atomically) when ``path`` is given."""
    data = doc.encode()
    if path is not None:
        from .core.fileio import atomic_write
        atomic_write(path, data)
    return data


def from_json(obj: dict | str | bytes) -> Document:
    """Load a document from its JSON form (a dict, or JSON text)."""
    if isinstance(obj, (str, bytes)):
        from .core.jsontext import loads
        try:
            obj = loads(obj)
        except (ValueError, RecursionError) as e:
            raise JsonFormatError(f"invalid JSON: {e}", path="$") from None
    return _registry.from_json(obj)


def list_formats() -> list[dict]:
    """The supported formats: name, family, extensions, description.

    Also available as ``potsherd.formats()``."""
    return [{"name": c.name, "family": c.family, "extensions": list(c.extensions),
             "magic": c.magic.hex() if c.magic else None, "description": c.description}
            for c in _registry.codecs()]


def import_gltf(src: Any, dst: str | os.PathLike, *, format: str | None = None,
                like: Any = None, options: dict | None = None,
                limits: Limits = DEFAULT_LIMITS) -> dict:
    """Import a .glb/.gltf into a game format (target from ``dst``'s extension or
    ``format``); ``like`` is the original file to keep what glTF cannot hold.
    See :func:`potsherd.importer.import_gltf`."""
    from .importer import import_gltf as _import_gltf
    return _import_gltf(src, dst, format=format, like=like, options=options, limits=limits)
