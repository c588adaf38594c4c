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

from .errors import (CountError, EncodeError, FormatError, InternalDecodeError,
                     InternalEncodeError, JsonFormatError, LimitError, MagicError,
                     NoGeometryError, NoImportError, NoSceneError, SceneExportError,
                     SceneImportError, TruncatedError, UnknownFormatError, ValueFormatError)
from .core.limits import DEFAULT_LIMITS, Limits
from .document import Document

from ._version import __version__  # noqa: E402  (one place, read by the library too)

# The registry (and with it numpy and the layout engine) is imported by the
# functions that need it, not here: ``potsherd --version`` and importing a
# light module (errors, limits) stay quick.

__all__ = [
    "read", "write", "from_json", "list_formats", "Document", "Limits",
    "FormatError", "TruncatedError", "CountError", "MagicError", "LimitError",
    "ValueFormatError", "JsonFormatError", "EncodeError", "UnknownFormatError",
    "InternalDecodeError", "InternalEncodeError", "NoSceneError", "SceneExportError",
    "NoGeometryError", "NoImportError", "SceneImportError", "import_gltf",
]


def read(source: str | os.PathLike | bytes, format: str | None = None, *,
         limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
    """Decode a file (path) or bytes.  ``format`` overrides detection;
    keyword parameters override layout parameters (e.g. ``gridCell=16``).

    The document's arrays are writable and its own: bytes given are copied
    from; a file of a format that decodes in place (the KO formats) is read
    into fresh memory and its arrays are views of it."""
    return (_API or _load_api()).read_document(source, format, limits=limits, **params)


_API = None


def _load_api():
    """The library layer, imported on the first read (an import statement per
    call costs more than reading a small file's header)."""
    global _API
    from . import api
    _API = api
    return api


def write(doc: Document, path: str | os.PathLike | None = None) -> bytes:
    """Encode a document; also write it (atomically) when ``path`` is given."""
    _API or _load_api()     # (a Document made by hand finds its codec through the registry)
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
    from . import registry as _registry
    return _registry.from_json(obj)


def list_formats() -> list[dict]:
    """The supported formats: name, family, extensions, magic (hex), description,
    ``features`` (read, write, json, export, import, textures, transcode: bools) and
    the declared ``export_options`` / ``import_options``.  Does not import the
    families when they are not loaded yet (see :mod:`potsherd.families`)."""
    from . import registry as _registry
    return _registry.format_rows()


def import_gltf(src: Any, dst: str | os.PathLike, *, format: str | None = None,
                like: Any = None, options: dict | None = None,
                limits: Limits = DEFAULT_LIMITS) -> dict:
    """Import a .glb/.gltf into a game format (target from ``dst``'s extension or
    ``format``); ``like`` is the original file to keep what glTF cannot hold.
    See :func:`potsherd.importer.import_gltf`."""
    from .importer import import_gltf as _import_gltf
    return _import_gltf(src, dst, format=format, like=like, options=options, limits=limits)


_LAZY_SUBMODULES = frozenset({"registry", "api", "cli", "containers", "core", "examples",
                              "export", "imaging", "importer", "scene", "view",
                              "convert"})


def __getattr__(name: str) -> Any:
    """``potsherd.registry`` (and the other subpackages) without importing
    them first, as when the package imported the registry eagerly."""
    if name in _LAZY_SUBMODULES or name == "_registry":  # the eager import's old alias
        import importlib
        return importlib.import_module(f"{__name__}.{name.lstrip('_')}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
