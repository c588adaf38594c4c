"""Byte spans: where each decoded value came from, recorded by the decoders themselves.

A decoder that is handed a :class:`SpanMap` (the layout engine's reference
interpreter through ``Scope.spans``, the PERS block layer, the binary FBX
record loop) notes, for every field it reads, the half-open byte range
``[start, end)`` it consumed.  Spans are keyed by the identity of the
container (the record dict, the list, the FBX node) and the key inside it, so
the document tree itself stays plain; the map keeps its containers alive so
identities cannot be reused while it exists.

Recording costs a dict insert per field, so normal decodes never do it: the
viewer asks for it (:func:`potsherd.registry.decode_with_spans`).
"""
from __future__ import annotations

from typing import Any


class SpanMap:
    """``[start, end)`` byte ranges of decoded values, by (container, key)."""

    __slots__ = ("_fields", "_keep")

    def __init__(self) -> None:
        self._fields: dict[int, dict] = {}
        self._keep: list = []

    def add(self, container: Any, key: Any, start: int, end: int) -> None:
        fields = self._fields.get(id(container))
        if fields is None:
            fields = self._fields[id(container)] = {}
            self._keep.append(container)
        fields[key] = (start, end)

    def get(self, container: Any, key: Any) -> tuple[int, int] | None:
        fields = self._fields.get(id(container))
        return None if fields is None else fields.get(key)

    def of(self, container: Any) -> dict:
        """Every recorded key of ``container`` with its span (empty when none)."""
        return self._fields.get(id(container), {})

    def __len__(self) -> int:
        return sum(len(f) for f in self._fields.values())
