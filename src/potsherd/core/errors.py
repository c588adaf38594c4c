"""One exception family for everything potsherd refuses.

Every error carries the byte offset where it happened and the field path
(``n3pmesh.vertices[12]``) so a user can find the problem in a hex editor.
Paths are built cheaply: the innermost raise knows the offset, and each
enclosing record prepends its own segment while the exception propagates.
"""
from __future__ import annotations

from typing import Any


class FormatError(Exception):
    """A file (or JSON document) does not match the format it claims to be.

    ``defined_at`` is where the innermost declared field on the error's path is
    declared (``ko.layout:212``), so a message leads to its table row."""

    defined_at: str | None = None

    def __init__(self, message: str, *, offset: int | None = None,
                 path: str | None = None, expected: Any = None,
                 found: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self._segments: list[str] = [path] if path else []
        self.expected = expected
        self.found = found

    # --- path building -------------------------------------------------
    def prepend(self, segment: str) -> "FormatError":
        """Add an outer path segment (``name``, ``[3]``) while unwinding."""
        self._segments.append(segment)
        return self

    @property
    def path(self) -> str:
        out = ""
        for seg in reversed(self._segments):
            if not out:
                out = seg
            elif seg.startswith("["):
                out += seg
            else:
                out += "." + seg
        return out

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"error": type(self).__name__, "message": self.message}
        if self.offset is not None:
            d["offset"] = self.offset
        if self._segments:
            d["path"] = self.path
        if self.expected is not None:
            d["expected"] = str(self.expected)
        if self.found is not None:
            d["found"] = str(self.found)
        if self.defined_at is not None:
            d["defined_at"] = self.defined_at
        return d

    def __str__(self) -> str:
        parts = [self.message]
        if self._segments:
            parts.append(f"at {self.path}")
        if self.offset is not None:
            parts.append(f"(offset {self.offset} / 0x{self.offset:X})")
        if self.expected is not None:
            parts.append(f"expected {self.expected}")
        if self.found is not None:
            parts.append(f"found {self.found}")
        return " ".join(parts)


class TruncatedError(FormatError):
    """The input ended before a field was complete."""


class CountError(FormatError):
    """A count or size is negative, absurd, or larger than the bytes left."""


class MagicError(FormatError):
    """The input does not start with what the format requires."""


class LimitError(FormatError):
    """A safety limit (depth, element count, inflated size) was exceeded."""


class ValueFormatError(FormatError):
    """A value is out of the range the format allows."""


class UnknownFormatError(FormatError):
    """No codec recognises the input."""


class JsonFormatError(FormatError):
    """A JSON document does not match the layout (path is the JSON path)."""


class EncodeError(FormatError):
    """A document cannot be written (inconsistent or missing fields)."""


class InternalDecodeError(FormatError):
    """A bug: an unexpected Python exception inside a decoder, wrapped.

    The fuzzing tier treats this one as a failure; users still get an offset.
    """


class InternalEncodeError(EncodeError):
    """A bug (or a document edited into a shape no codec check caught): an
    unexpected Python exception inside an encoder, wrapped.

    The fuzzing tier treats this one as a failure.
    """
