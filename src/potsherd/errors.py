"""Every error class potsherd raises, in one place (also exported as ``potsherd.X``).

All data errors are :class:`FormatError` subclasses carrying ``offset``, ``path``,
``expected`` and ``found``; the conversion ones below are raised by the glTF export
and import layers (family importers raise subclasses of them or of ``FormatError``)."""
from __future__ import annotations

from .core.errors import (CountError, EncodeError, FormatError, InternalDecodeError,
                          InternalEncodeError, JsonFormatError, LimitError, MagicError,
                          TruncatedError, UnknownFormatError, ValueFormatError)

__all__ = [
    "FormatError", "TruncatedError", "CountError", "MagicError", "LimitError",
    "ValueFormatError", "UnknownFormatError", "JsonFormatError", "EncodeError",
    "InternalDecodeError", "InternalEncodeError",
    "NoSceneError", "SceneExportError", "NoGeometryError", "NoImportError", "SceneImportError",
]


class NoSceneError(FormatError):
    """The codec has no glTF conversion."""


class SceneExportError(FormatError):
    """A bug in a family's ``to_scene`` or in the writer, wrapped."""


class NoGeometryError(FormatError):
    """A model whose geometry lives in referenced files, none of which were found."""


class NoImportError(FormatError):
    """The target format has no ``from_scene`` (cannot be made from glTF yet)."""


class SceneImportError(FormatError):
    """A bug in a family's ``from_scene``, wrapped (never a traceback)."""
